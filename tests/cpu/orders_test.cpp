#include <gtest/gtest.h>

#include <set>

#include "cusync/tile_order.h"

using namespace cusync;

template <class Order>
void expectBijection(Dim3 g) {
  const auto table = buildOrderTable(Order{}, g);
  ASSERT_EQ(table.size(), g.count());
  std::set<std::tuple<uint32_t, uint32_t, uint32_t>> seen;
  for (uint32_t i = 0; i < table.size(); ++i) {
    const Dim3 t = table[i];
    EXPECT_LT(t.x, g.x);
    EXPECT_LT(t.y, g.y);
    EXPECT_LT(t.z, g.z);
    EXPECT_EQ(Order{}.linearIndex(t, g), i);
    EXPECT_TRUE(seen.insert({t.x, t.y, t.z}).second);
  }
}

TEST(TileOrder, RowAndColumnMajorAreBijections) {
  for (Dim3 g : {Dim3(1, 1, 1), Dim3(7, 3, 1), Dim3(4, 9, 2), Dim3(96, 16, 1)}) {
    expectBijection<RowMajorOrder>(g);
    expectBijection<ColumnMajorOrder>(g);
    expectBijection<GroupedOrder>(g);
  }
}

TEST(TileOrder, RowMajorWalksRowsFirst) {
  const auto t = buildOrderTable(RowMajorOrder{}, Dim3(3, 2));
  EXPECT_EQ(t[1], Dim3(1, 0, 0));
  EXPECT_EQ(t[3], Dim3(0, 1, 0));
  const auto c = buildOrderTable(ColumnMajorOrder{}, Dim3(3, 2));
  EXPECT_EQ(c[1], Dim3(0, 1, 0));
  EXPECT_EQ(c[2], Dim3(1, 0, 0));
}

TEST(TileOrder, RowMajorTileInvertsRowMajorOrder) {
  const Dim3 g(5, 4, 3);
  for (uint32_t i = 0; i < g.count(); ++i) EXPECT_EQ(RowMajorOrder{}.linearIndex(rowMajorTile(i, g), g), i);
}

// groupedTile() decodes tickets without the table: it must agree with the
// table of every order it claims (row-major as group 1, grouped bands, ragged
// last bands, batches), and other orders must fall back to the table.
TEST(TileOrder, GroupedTileMatchesTheTable) {
  for (Dim3 g : {Dim3(1, 1, 1), Dim3(7, 3, 1), Dim3(4, 9, 2), Dim3(96, 16, 1), Dim3(5, 17, 3), Dim3(32, 8, 1)})
    for (uint32_t group : {1u, 2u, 3u, 8u, 16u, 40u}) {
      const GroupedOrder o{group};
      const auto table = buildOrderTable(o, g);
      for (uint32_t i = 0; i < table.size(); ++i)
        ASSERT_EQ(groupedTile(i, g, arithmeticGroupOf(o)), table[i])
            << "grid " << tileName(g) << " group " << group << " position " << i;
    }
  const Dim3 g(6, 5, 2);
  const auto rows = buildOrderTable(RowMajorOrder{}, g);
  ASSERT_EQ(arithmeticGroupOf(RowMajorOrder{}), 1u);
  for (uint32_t i = 0; i < rows.size(); ++i) EXPECT_EQ(groupedTile(i, g, 1), rows[i]) << i;
  EXPECT_EQ(arithmeticGroupOf(ColumnMajorOrder{}), 0u);
}

struct DuplicateOrder {  // tiles (0,0) and (1,0) collide
  uint32_t linearIndex(const Dim3& t, const Dim3& g) const { return t.x == 1 && t.y == 0 ? 0 : t.y * g.x + t.x; }
};
struct OutOfRangeOrder {
  uint32_t linearIndex(const Dim3& t, const Dim3& g) const { return t.y * g.x + t.x + (t.x == 2 ? 100 : 0); }
};

TEST(TileOrder, DuplicateIsNamed) {
  try {
    buildOrderTable(DuplicateOrder{}, Dim3(3, 2), "gemm2");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OrderNotBijection);
    EXPECT_NE(std::string(e.what()).find("tile (1,0,0)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("already taken by tile (0,0,0)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gemm2"), std::string::npos) << e.what();
  }
}

TEST(TileOrder, OutOfRangeIsNamed) {
  try {
    buildOrderTable(OutOfRangeOrder{}, Dim3(3, 2));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OrderNotBijection);
    EXPECT_NE(std::string(e.what()).find("tile (2,0,0)"), std::string::npos) << e.what();
  }
}
