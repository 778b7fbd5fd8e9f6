// Each policy against a brute-force expansion of which producer tiles every
// step of every consumer tile reads, over several grid and tile shapes.
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "cusync/stage.h"

using namespace cusync;
using TileSet = std::set<uint32_t>;

namespace {

uint32_t lin(uint32_t x, uint32_t y, uint32_t z, const Dim3& g) { return (z * g.y + y) * g.x + x; }

// Producer tiles overlapping rows [row0, row1) x cols [col0, col1) of batch z.
void addBox(TileSet& s, int64_t row0, int64_t row1, int64_t col0, int64_t col1, uint32_t z, const StageShape& p) {
  row0 = std::max<int64_t>(row0, 0);
  row1 = std::min<int64_t>(row1, p.rows());
  col1 = std::min<int64_t>(col1, p.cols());
  for (int64_t r = row0; r < row1; r += 1)
    for (int64_t c = col0; c < col1; c += 1) s.insert(lin(c / p.tile.x, r / p.tile.y, z, p.grid));
}

using ReadsFn = std::function<TileSet(const Read&, const StageShape&, const StageShape&)>;

ReadsFn gemmReads() {
  return [](const Read& r, const StageShape& c, const StageShape& p) {
    TileSet s;
    addBox(s, r.row, int64_t(r.row) + c.tile.y, r.col, int64_t(r.col) + c.tile.z, r.batch, p);
    return s;
  };
}

ReadsFn stridedReads(uint32_t stride, uint32_t count) {
  return [=](const Read& r, const StageShape& c, const StageShape& p) {
    TileSet s;
    for (uint32_t i = 0; i < count; ++i) {
      const int64_t shift = int64_t(i) * stride * p.tile.x;
      addBox(s, r.row, int64_t(r.row) + c.tile.y, r.col + shift,
             std::min<int64_t>(int64_t(r.col) + c.tile.z, int64_t(stride) * p.tile.x) + shift, r.batch, p);
    }
    return s;
  };
}

ReadsFn convReads(const policy::Conv2DTileSync& cv) {
  return [=](const Read& r, const StageShape& c, const StageShape& p) {
    TileSet s;
    const uint32_t rs = r.col / cv.C, ch = r.col % cv.C;
    const int64_t off = (int64_t(rs / cv.S) - cv.padH) * cv.W + (int64_t(rs % cv.S) - cv.padW);
    addBox(s, int64_t(r.row) + off, int64_t(r.row) + off + c.tile.y, ch, int64_t(ch) + c.tile.z, r.batch, p);
    return s;
  };
}

// Walks every consumer row tile and batch from walkStart and checks that
// every tile it reads is covered by a semaphore it has waited on, and (when
// `exact`) that it never waits on a tile the whole walk does not read.
template <class P>
void checkCoverage(const P& pol, const StageShape& cons, const StageShape& prod, const ReadsFn& reads, bool exact,
                   uint32_t walkStart = 0) {
  std::vector<std::vector<uint32_t>> tilesOfSem(pol.semaphoreCount(prod));
  for (uint32_t z = 0; z < prod.grid.z; ++z)
    for (uint32_t y = 0; y < prod.grid.y; ++y)
      for (uint32_t x = 0; x < prod.grid.x; ++x) {
        const uint32_t s = pol.tileIndex(Dim3(x, y, z), prod);
        ASSERT_LT(s, tilesOfSem.size());
        tilesOfSem[s].push_back(lin(x, y, z, prod.grid));
      }
  const uint32_t extent = pol.readExtent(prod);
  for (uint32_t z = 0; z < cons.grid.z; ++z)
    for (uint32_t y = 0; y < cons.grid.y; ++y) {
      TileSet covered, allReads, waited;
      for (uint32_t col = walkStart; col < extent; col += cons.tile.z) {
        const Read r{col, y * cons.tile.y, z, walkStart};
        const SemSpan span = pol.waitSpan(r, cons, prod);
        EXPECT_EQ(pol.isSync(r, cons, prod), !span.empty());
        for (uint32_t i = 0; i < span.count(); ++i) {
          const uint32_t s = span.at(i);
          ASSERT_LT(s, tilesOfSem.size()) << P::kName;
          for (uint32_t t : tilesOfSem[s]) {
            covered.insert(t);
            waited.insert(t);
          }
        }
        const TileSet need = reads(r, cons, prod);
        allReads.insert(need.begin(), need.end());
        for (uint32_t t : need)
          ASSERT_TRUE(covered.count(t)) << P::kName << ": row tile " << y << " batch " << z << " reads producer tile "
                                        << t << " at column " << col << " without waiting for it";
      }
      if (exact) {
        for (uint32_t t : waited) {
          EXPECT_TRUE(allReads.count(t)) << P::kName << ": row tile " << y << " waits on tile " << t
                                         << " it never reads";
        }
      }
    }
}

template <class P>
void checkPairs(const P& pol, const StageShape& cons, const StageShape& prod) {
  Stage<policy::NoSync, P, HostMemory> p("prod", prod.grid, prod.tile, {}, pol);
  Stage<P, policy::NoSync, HostMemory> c("cons", cons.grid, cons.tile, pol);
  EXPECT_NO_THROW(pair(p, c)) << P::kName;
}

struct Shapes {
  StageShape prod, cons;
};

std::vector<Shapes> gemmShapes() {
  std::vector<Shapes> v;
  for (Dim3 pg : {Dim3(3, 5), Dim3(4, 4, 2), Dim3(6, 2)})
    for (uint32_t cbm : {8u, 16u, 32u})
      for (uint32_t bk : {8u, 16u, 32u, 64u}) {
        StageShape p{pg, Dim3(32, 16, 1)};
        StageShape c{Dim3(2, ceilDiv(p.rows(), cbm), pg.z), Dim3(16, cbm, bk)};
        v.push_back({p, c});
      }
  return v;
}

}  // namespace

TEST(Policies, TileSyncCoversExactlyWhatIsRead) {
  for (const auto& s : gemmShapes()) {
    checkCoverage(policy::TileSync{}, s.cons, s.prod, gemmReads(), true);
    checkCoverage(policy::TileSync{}, s.cons, s.prod, gemmReads(), true, 2 * s.cons.tile.z);  // split K
    checkPairs(policy::TileSync{}, s.cons, s.prod);
  }
}

TEST(Policies, TileSyncWaitsOnlyForTilesOfTheCurrentStep) {
  for (const auto& s : gemmShapes()) {
    for (uint32_t col = 0; col < s.prod.cols(); col += s.cons.tile.z) {
      const Read r{col, 0, 0, 0};
      const SemSpan span = policy::TileSync{}.waitSpan(r, s.cons, s.prod);
      const TileSet need = gemmReads()(r, s.cons, s.prod);
      for (uint32_t i = 0; i < span.count(); ++i) EXPECT_TRUE(need.count(span.at(i)));
    }
  }
}

TEST(Policies, RowSyncWaitsOnceForWholeRows) {
  for (const auto& s : gemmShapes()) {
    checkCoverage(policy::RowSync{}, s.cons, s.prod, gemmReads(), false);
    checkCoverage(policy::RowSync{}, s.cons, s.prod, gemmReads(), false, s.cons.tile.z);
    checkPairs(policy::RowSync{}, s.cons, s.prod);
    EXPECT_EQ(policy::RowSync{}.waitValue(0, s.prod), s.prod.grid.x);
    EXPECT_FALSE(policy::RowSync{}.isSync(Read{s.cons.tile.z, 0, 0, 0}, s.cons, s.prod));
  }
}

TEST(Policies, BatchedRowSyncGroupsRows) {
  for (uint32_t k : {1u, 2u, 3u})
    for (const auto& s : gemmShapes()) {
      policy::BatchedRowSync pol{k};
      checkCoverage(pol, s.cons, s.prod, gemmReads(), false);
      checkPairs(pol, s.cons, s.prod);
      const uint32_t lastGroup = pol.groups(s.prod) - 1;
      EXPECT_EQ(pol.waitValue(lastGroup, s.prod), s.prod.grid.x * (s.prod.grid.y - lastGroup * k));
    }
}

TEST(Policies, StridedTileSyncWaitsForPartners) {
  for (uint32_t count : {2u, 3u})
    for (uint32_t stride : {1u, 2u, 4u})
      for (uint32_t bk : {16u, 32u, 64u}) {
        StageShape p{Dim3(stride * count, 5), Dim3(32, 16, 1)};
        StageShape c{Dim3(3, 5), Dim3(16, 16, bk)};
        policy::StridedTileSync pol{stride, count};
        ASSERT_EQ(pol.checkPair(c, p), nullptr);
        checkCoverage(pol, c, p, stridedReads(stride, count), true);
        checkPairs(pol, c, p);
      }
}

TEST(Policies, Conv2DTileSyncCoversTheFilterHalo) {
  for (uint32_t R : {1u, 3u})
    for (uint32_t W : {4u, 8u})
      for (uint32_t bk : {8u, 16u}) {
        policy::Conv2DTileSync pol;
        pol.R = pol.S = R;
        pol.padH = pol.padW = R / 2;
        pol.C = 32;
        pol.W = W;
        StageShape p{Dim3(2, 8), Dim3(16, 8, 1)};  // 64 pixels x 32 channels
        StageShape c{Dim3(2, 8), Dim3(16, 8, bk)};
        ASSERT_EQ(pol.checkPair(c, p), nullptr);
        checkCoverage(pol, c, p, convReads(pol), true);
        // A walk starting past the first filter position waits for the whole halo at once (documented).
        checkCoverage(pol, c, p, convReads(pol), false, pol.C);
        checkCoverage(pol, c, p, convReads(pol), false, pol.C / 2);  // split K inside the first filter position
        checkPairs(pol, c, p);
      }
}

TEST(Policies, WholeSyncWaitsOnceForEverything) {
  for (const auto& s : gemmShapes()) {
    checkCoverage(policy::WholeSync{}, s.cons, s.prod, gemmReads(), false);
    checkCoverage(policy::WholeSync{}, s.cons, s.prod, gemmReads(), false, s.cons.tile.z);
    checkPairs(policy::WholeSync{}, s.cons, s.prod);
    EXPECT_EQ(policy::WholeSync{}.waitValue(0, s.prod), s.prod.grid.count());
  }
}

TEST(Policies, NoSyncNeverWaits) {
  const auto s = gemmShapes().front();
  EXPECT_TRUE(policy::NoSync{}.waitSpan(Read{}, s.cons, s.prod).empty());
  EXPECT_EQ(policy::NoSync{}.semaphoreCount(s.prod), 0u);
  static_assert(policy::isNoSync<policy::NoSync> && !policy::isNoSync<policy::TileSync>);
}

TEST(Policies, WaitValuesMatchPostsPerRun) {
  const StageShape p{Dim3(5, 4), Dim3(32, 16, 1)};
  Stage<policy::NoSync, policy::RowSync, HostMemory> row("row", p.grid, p.tile);
  for (uint64_t v : row.postsPerRun()) EXPECT_EQ(v, 5u);
  Stage<policy::NoSync, policy::BatchedRowSync, HostMemory> b("b", p.grid, p.tile, {}, policy::BatchedRowSync{3});
  ASSERT_EQ(b.postsPerRun().size(), 2u);
  EXPECT_EQ(b.postsPerRun()[0], 15u);
  EXPECT_EQ(b.postsPerRun()[1], 5u);
}
