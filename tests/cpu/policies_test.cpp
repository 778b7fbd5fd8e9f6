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

namespace {

// Convolutions of every geometry the policy takes: each output pixel's reads
// enumerated from the convolution's definition (not from the policy's
// unclipped bounds), step by step along the consumer's k walk.
struct ConvCase {
  uint32_t N, H, W, C, R, stride;
  uint32_t consBM, prodBM, prodBN, bk;
};

std::string describe(const ConvCase& c) {
  return "N=" + std::to_string(c.N) + " H=" + std::to_string(c.H) + " W=" + std::to_string(c.W) +
         " C=" + std::to_string(c.C) + " R=S=" + std::to_string(c.R) + " stride=" + std::to_string(c.stride) +
         " BM=" + std::to_string(c.consBM) + " producer BM=" + std::to_string(c.prodBM) +
         " BN=" + std::to_string(c.prodBN) + " BK=" + std::to_string(c.bk);
}

policy::Conv2DTileSync convPolicy(const ConvCase& c) {
  policy::Conv2DTileSync pol;
  pol.R = pol.S = c.R;
  pol.padH = pol.padW = c.R / 2;
  pol.C = c.C;
  pol.H = c.H;
  pol.W = c.W;
  pol.strideH = pol.strideW = c.stride;
  pol.N = c.N;
  return pol;
}

struct ConvStages {
  StageShape prod, cons;
  uint32_t outPixels;
};

// The producer writes N*H*W pixels x C channels; the consumer N*Ho*Wo pixels
// (its output channels do not matter to the waits: one column tile).
ConvStages convStages(const ConvCase& c) {
  const policy::Conv2DTileSync pol = convPolicy(c);
  const uint32_t out = c.N * pol.outH() * pol.outW();
  ConvStages s;
  s.prod = StageShape{Dim3(ceilDiv(c.C, c.prodBN), ceilDiv(c.N * c.H * c.W, c.prodBM)), Dim3(c.prodBN, c.prodBM, 1)};
  s.cons = StageShape{Dim3(1, ceilDiv(out, c.consBM)), Dim3(64, c.consBM, c.bk)};
  s.outPixels = out;
  return s;
}

// Producer row tiles that output pixels [row, row + BM) read at filter
// position (r, s): every pixel's input inside the image, nothing in the padding.
std::set<uint32_t> convRowTilesRead(const ConvCase& c, uint32_t Ho, uint32_t Wo, uint32_t row, uint32_t r, uint32_t s,
                                    const ConvStages& st) {
  std::set<uint32_t> tiles;
  const int64_t pad = c.R / 2;
  for (uint32_t p = row; p < std::min(row + c.consBM, st.outPixels); ++p) {
    const uint32_t n = p / (Ho * Wo), ho = p % (Ho * Wo) / Wo, wo = p % Wo;
    const int64_t hi = int64_t(ho) * c.stride + r - pad, wi = int64_t(wo) * c.stride + s - pad;
    if (hi < 0 || hi >= c.H || wi < 0 || wi >= c.W) continue;
    tiles.insert(uint32_t(((int64_t(n) * c.H + hi) * c.W + wi) / c.prodBM));
  }
  return tiles;
}

// The first read of the walk from walkStart that is not covered by a wait at
// or before its step, described; empty when every read is covered.
template <class P>
std::string firstUncoveredConvRead(const P& pol, const ConvCase& c, uint32_t walkStart) {
  const ConvStages st = convStages(c);
  const uint32_t Ho = (c.H + 2 * (c.R / 2) - c.R) / c.stride + 1, Wo = (c.W + 2 * (c.R / 2) - c.R) / c.stride + 1;
  const uint32_t gx = st.prod.grid.x, gy = st.prod.grid.y;
  for (uint32_t y = 0; y < st.cons.grid.y; ++y) {
    const uint32_t row = y * c.consBM;
    std::vector<std::set<uint32_t>> rowsAt(c.R * c.R);
    for (uint32_t rs = 0; rs < c.R * c.R; ++rs) rowsAt[rs] = convRowTilesRead(c, Ho, Wo, row, rs / c.R, rs % c.R, st);
    std::set<std::pair<uint32_t, uint32_t>> waited;  // (row tile, column tile)
    for (uint32_t col = walkStart; col < pol.readExtent(st.prod); col += c.bk) {
      const SemSpan span = pol.waitSpan(Read{col, row, 0, walkStart}, st.cons, st.prod);
      for (uint32_t i = 0; i < span.count(); ++i) {
        const uint32_t sem = span.at(i);
        if (sem >= gx * gy) return "waits on semaphore " + std::to_string(sem) + " past the producer's tiles";
        waited.insert({sem / gx % gy, sem % gx});
      }
      const uint32_t rs = col / c.C, ch = col % c.C;
      for (uint32_t ty : rowsAt[rs])
        for (uint32_t tx = ch / c.prodBN; tx <= (ch + c.bk - 1) / c.prodBN; ++tx)
          if (!waited.count({ty, tx}))
            return "consumer row tile " + std::to_string(y) + " at k " + std::to_string(col) + " (filter position " +
                   std::to_string(rs) + ", channel " + std::to_string(ch) + ", walk from " +
                   std::to_string(walkStart) + ") reads producer tile (" + std::to_string(tx) + "," +
                   std::to_string(ty) + ") without having waited for it";
    }
  }
  return "";
}

std::vector<ConvCase> convCases() {
  std::vector<ConvCase> v;
  const std::pair<uint32_t, uint32_t> images[] = {{1, 1}, {7, 7}, {13, 13}, {7, 13}, {13, 7}, {8, 8}};
  const std::pair<uint32_t, uint32_t> channels[] = {{8, 8}, {520, 8}, {64, 32}, {64, 64}, {576, 64}};  // C, BK
  for (uint32_t N : {1u, 3u})
    for (auto [H, W] : images)
      for (uint32_t R : {1u, 3u})
        for (uint32_t stride : {1u, 2u})
          for (auto [C, bk] : channels)
            for (uint32_t consBM : {128u, 64u, 16u})
              for (uint32_t prodBM : {128u, 64u, 16u}) v.push_back({N, H, W, C, R, stride, consBM, prodBM, 64, bk});
  // The layer shapes with the Hopper kernel's tiles (one image).
  for (auto [H, C] : {std::pair<uint32_t, uint32_t>{56, 64}, {28, 128}, {14, 256}, {7, 512}})
    for (uint32_t stride : {1u, 2u})
      for (uint32_t R : {1u, 3u}) v.push_back({1, H, H, C, R, stride, 128, 128, C == 64 ? 64u : 128u, 64});
  return v;
}

}  // namespace

TEST(Policies, Conv2DTileSyncCoversEveryReadOfStridedAndPointwiseConvolutions) {
  size_t walks = 0;
  for (const ConvCase& c : convCases()) {
    SCOPED_TRACE(describe(c));
    const policy::Conv2DTileSync pol = convPolicy(c);
    const ConvStages st = convStages(c);
    ASSERT_EQ(pol.checkPair(st.cons, st.prod), nullptr);
    // From the start, from the second k step, and from the second filter position (split K).
    for (uint32_t walkStart : {0u, c.bk, c.C}) {
      if (walkStart >= pol.readExtent(st.prod)) continue;
      ASSERT_EQ(firstUncoveredConvRead(pol, c, walkStart), "") << "walk from " << walkStart;
      ++walks;
    }
    checkPairs(pol, st.cons, st.prod);
  }
  EXPECT_GT(walks, 2000u);
}

TEST(Policies, Conv2DTileSyncWithTheImageHeightWaitsAsWithout) {
  // Stride 1 and same padding: giving H (and N) changes the checks, not the waits.
  for (const ConvCase& c : convCases()) {
    if (c.stride != 1) continue;
    SCOPED_TRACE(describe(c));
    const policy::Conv2DTileSync withH = convPolicy(c);
    policy::Conv2DTileSync without = withH;
    without.H = 0;
    without.N = 0;
    const ConvStages st = convStages(c);
    for (uint32_t y = 0; y < st.cons.grid.y; ++y)
      for (uint32_t col = 0; col < withH.readExtent(st.prod); col += c.bk) {
        const Read r{col, y * c.consBM, 0, 0};
        const SemSpan a = withH.waitSpan(r, st.cons, st.prod), b = without.waitSpan(r, st.cons, st.prod);
        ASSERT_EQ(a.count(), b.count()) << "row tile " << y << " k " << col;
        for (uint32_t i = 0; i < a.count(); ++i) ASSERT_EQ(a.at(i), b.at(i));
      }
  }
}

namespace {

// Planted short waits, each a plausible mistake; the coverage check must
// catch them. The halo below left out: rows up to the last output pixel's own
// input pixel (filter centre).
struct NoHaloBelowConv : policy::Conv2DTileSync {
  SemSpan waitSpan(const Read& r, const StageShape& cons, const StageShape& prod) const {
    SemSpan s = Conv2DTileSync::waitSpan(r, cons, prod);
    const int64_t last = inputPixel(r.row + cons.tile.y - 1, padH, padW);
    const uint32_t lastTile = uint32_t(std::max<int64_t>(0, std::min<int64_t>(last, prod.rows() - 1)) / prod.tile.y);
    const uint32_t firstTile = s.first / prod.grid.x % prod.grid.y;
    if (!s.empty()) s.n[1] = lastTile >= firstTile ? std::min(s.n[1], lastTile - firstTile + 1) : 0;
    return s;
  }
};

// The halo above left out: rows from the first output pixel's own input pixel.
struct NoHaloAboveConv : policy::Conv2DTileSync {
  SemSpan waitSpan(const Read& r, const StageShape& cons, const StageShape& prod) const {
    SemSpan s = Conv2DTileSync::waitSpan(r, cons, prod);
    const int64_t first = inputPixel(r.row, padH, padW);
    const uint32_t firstTile = uint32_t(std::max<int64_t>(0, first) / prod.tile.y);
    const uint32_t at = s.first / prod.grid.x % prod.grid.y;
    if (!s.empty() && firstTile > at) {
      const uint32_t skip = std::min(s.n[1], firstTile - at);
      s.first += skip * prod.grid.x;
      s.n[1] -= skip;
    }
    return s;
  }
};

// The stride ignored: the stride-1 rule (output pixels taken as the input's).
struct StrideIgnoredConv : policy::Conv2DTileSync {
  SemSpan waitSpan(const Read& r, const StageShape& cons, const StageShape& prod) const {
    Conv2DTileSync sameSize = *this;
    sameSize.H = 0;
    return sameSize.waitSpan(r, cons, prod);
  }
};

// The share of the 3x3 cases (strided or not) in which the coverage check
// finds a read that `Planted` has not waited for.
template <class Planted>
double shareCaught(bool strided) {
  size_t caught = 0, cases = 0;
  for (const ConvCase& c : convCases()) {
    if (c.R != 3 || (c.stride == 2) != strided) continue;
    Planted pol;
    static_cast<policy::Conv2DTileSync&>(pol) = convPolicy(c);
    caught += !firstUncoveredConvRead(pol, c, 0).empty();
    ++cases;
  }
  return double(caught) / double(cases);
}

}  // namespace

// Each planted mistake shows in at least one case in ten (a mistake in the
// halo shows only where it crosses a producer tile boundary).
TEST(Policies, Conv2DTileSyncCoverageCatchesShortWaits) {
  EXPECT_GT(shareCaught<NoHaloBelowConv>(false), 0.1);
  EXPECT_GT(shareCaught<NoHaloBelowConv>(true), 0.1);
  EXPECT_GT(shareCaught<NoHaloAboveConv>(false), 0.1);
  EXPECT_GT(shareCaught<NoHaloAboveConv>(true), 0.1);
  EXPECT_GT(shareCaught<StrideIgnoredConv>(true), 0.1);
}

TEST(Policies, Conv2DTileSyncRejectsInconsistentGeometry) {
  const ConvCase good{2, 14, 14, 64, 3, 2, 128, 128, 64, 32};
  const ConvStages st = convStages(good);
  ASSERT_EQ(convPolicy(good).checkPair(st.cons, st.prod), nullptr);
  struct Bad {
    const char* what;
    std::function<void(policy::Conv2DTileSync&, StageShape& cons, StageShape& prod)> change;
    const char* message;
  };
  const Bad bad[] = {
      {"no filter", [](auto& p, auto&, auto&) { p.R = 0; }, "R, S, C and W must be at least 1"},
      {"stride 0", [](auto& p, auto&, auto&) { p.strideW = 0; }, "strides must be at least 1"},
      {"padding as large as the filter", [](auto& p, auto&, auto&) { p.padH = 3; }, "padding must be smaller than the filter"},
      {"stride 2 without H", [](auto& p, auto&, auto&) { p.H = 0; p.N = 0; }, "a strided convolution needs the input height H"},
      {"filter larger than the padded input", [](auto& p, auto&, auto&) { p.H = 1; p.padH = 0; p.N = 0; },
       "the filter is larger than the padded input"},
      {"padding past the filter's centre", [](auto& p, auto&, auto&) { p.R = p.S = 5; p.padH = p.padW = 3; },
       "padding must be at most (filter - 1) / 2"},
      {"C not a multiple of the k step", [](auto& p, auto&, auto&) { p.C = 48; }, "must divide C"},
      {"producer narrower than C", [](auto& p, auto&, auto& prod) { p.C = 96; prod.grid.x = 1; },
       "the producer has fewer columns than C channels"},
      {"N without H", [](auto& p, auto&, auto&) { p.H = 0; p.strideH = p.strideW = 1; }, "against N images needs the input height H"},
      {"producer of another image size", [](auto& p, auto&, auto&) { p.H = 28; }, "the producer's row tiles"},
      {"consumer with Ho = H (stride left out)", [](auto&, auto& cons, auto&) { cons.grid.y = ceilDiv(2 * 14 * 14, 128); },
       "Ho = (H + 2*padH - R)/strideH + 1"},
      {"consumer of another batch", [](auto&, auto& cons, auto&) { cons.grid.y += 1; }, "the consumer's row tiles"},
  };
  for (const Bad& b : bad) {
    policy::Conv2DTileSync pol = convPolicy(good);
    StageShape cons = st.cons, prod = st.prod;
    b.change(pol, cons, prod);
    const char* msg = pol.checkPair(cons, prod);
    ASSERT_NE(msg, nullptr) << b.what;
    EXPECT_NE(std::string(msg).find("Conv2DTileSync: "), std::string::npos) << b.what << ": " << msg;
    EXPECT_NE(std::string(msg).find(b.message), std::string::npos) << b.what << ": " << msg;
  }
  // Through pair(), before anything runs.
  policy::Conv2DTileSync pol = convPolicy(good);
  pol.strideH = pol.strideW = 1;  // the consumer's grid was built for stride 2
  Stage<policy::NoSync, policy::Conv2DTileSync, HostMemory> p("conv1", st.prod.grid, st.prod.tile, {}, pol);
  Stage<policy::Conv2DTileSync, policy::NoSync, HostMemory> c("conv2", st.cons.grid, st.cons.tile, pol);
  try {
    pair(p, c);
    ADD_FAILURE() << "pair() accepted a consumer grid built for another stride";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::PolicyMismatch);
    EXPECT_NE(std::string(e.what()).find("N*Ho*Wo"), std::string::npos) << e.what();
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

// A policy that declares kWaitsAtWalkStartOnly promises that only the walk's
// first step waits and that a step at the walk's first column waits on that
// same span whatever else changes: a waiter evaluates the first step alone.
template <class P, class Shapes>
void checkWaitsAtWalkStartOnly(const P& pol, const Shapes& shapes) {
  static_assert(policy::waitsAtWalkStartOnly<P>);
  for (const auto& s : shapes)
    for (uint32_t walkStart : {0u, s.cons.tile.z, 2 * s.cons.tile.z})
      for (uint32_t z = 0; z < s.cons.grid.z; ++z)
        for (uint32_t y = 0; y < s.cons.grid.y; ++y) {
          const SemSpan first = pol.waitSpan(Read{walkStart, y * s.cons.tile.y, z, walkStart}, s.cons, s.prod);
          EXPECT_FALSE(first.empty()) << P::kName << ": the walk's first step waits";
          for (uint32_t col = walkStart + s.cons.tile.z; col < pol.readExtent(s.prod); col += s.cons.tile.z)
            EXPECT_TRUE(pol.waitSpan(Read{col, y * s.cons.tile.y, z, walkStart}, s.cons, s.prod).empty())
                << P::kName << ": a later step waits (column " << col << ", walk from " << walkStart << ")";
          // A loader whose columns repeat (im2col's filter positions) reads the first column again.
          const SemSpan again = pol.waitSpan(Read{walkStart, y * s.cons.tile.y, z, walkStart}, s.cons, s.prod);
          ASSERT_EQ(again.count(), first.count());
          for (uint32_t i = 0; i < first.count(); ++i) EXPECT_EQ(again.at(i), first.at(i));
        }
}

TEST(Policies, RowPoliciesWaitAtTheWalksFirstStepOnly) {
  checkWaitsAtWalkStartOnly(policy::RowSync{}, gemmShapes());
  checkWaitsAtWalkStartOnly(policy::BatchedRowSync{2}, gemmShapes());
  checkWaitsAtWalkStartOnly(policy::WholeSync{}, gemmShapes());
  static_assert(!policy::waitsAtWalkStartOnly<policy::TileSync>, "TileSync waits at every new producer column");
}

// Conv2DTileSync waits once per walk, for every channel tile of its rows.
TEST(Policies, Conv2DTileSyncWaitsAtTheWalksFirstStepOnly) {
  for (const ConvCase& c : convCases()) {
    SCOPED_TRACE(describe(c));
    checkWaitsAtWalkStartOnly(convPolicy(c), std::vector<ConvStages>{convStages(c)});
  }
}

TEST(Geometry, SpanPositionsAndEverySemaphoreAgree) {
  SemSpan s;
  s.first = 5;
  s.n[0] = 3, s.step[0] = 2;
  std::vector<uint32_t> viaAt, viaEvery;
  for (uint32_t i = 0; i < s.count(); ++i) viaAt.push_back(s.at(i));
  everySemaphore(s, [&](uint32_t sem) { return viaEvery.push_back(sem), true; });
  EXPECT_EQ(viaAt, viaEvery);
  EXPECT_EQ(viaAt, (std::vector<uint32_t>{5, 7, 9}));
  s.n[1] = 2, s.step[1] = 10, s.n[2] = 2, s.step[2] = 100;
  viaAt.clear(), viaEvery.clear();
  for (uint32_t i = 0; i < s.count(); ++i) viaAt.push_back(s.at(i));
  everySemaphore(s, [&](uint32_t sem) { return viaEvery.push_back(sem), true; });
  EXPECT_EQ(viaAt, viaEvery);
  EXPECT_EQ(viaAt.size(), 12u);
  EXPECT_EQ(viaAt.back(), 5u + 4 + 10 + 100);
  int calls = 0;
  EXPECT_FALSE(everySemaphore(s, [&](uint32_t) { return ++calls < 3; }));
  EXPECT_EQ(calls, 3) << "stops at the first false";
}
