// Emulator runs of real pipelines: a copy chain and a three-stage chain of
// small host GEMMs, exact results for every policy x order x flag x launch
// mode over several runs; planted deadlocks are reported, not hung.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "cusync/emu/pipeline.h"
#include "cusync/stage.h"

using namespace cusync;
using namespace std::chrono_literals;

namespace {

struct Mat {
  int rows = 0, cols = 0;
  std::vector<double> v;
  Mat(int r, int c) : rows(r), cols(c), v(size_t(r) * c) {}
  double& at(int r, int c) { return v[size_t(r) * cols + c]; }
  double at(int r, int c) const { return v[size_t(r) * cols + c]; }
};

Mat randomMat(int r, int c, std::mt19937& rng) {
  Mat m(r, c);
  std::uniform_int_distribution<int> d(-2, 2);
  for (double& x : m.v) x = d(rng);
  return m;
}

Mat reference(const Mat& a, const Mat& b) {
  Mat c(a.rows, b.cols);
  for (int i = 0; i < a.rows; ++i)
    for (int j = 0; j < b.cols; ++j) {
      double s = 0;
      for (int k = 0; k < a.cols; ++k) s += a.at(i, k) * b.at(k, j);
      c.at(i, j) = s;
    }
  return c;
}

// One tile of C = A * B (bm x bn), waiting before each k step of A. Tiles of
// the last row take `lastRowDelay` longer, so consumers run while they are missing.
template <class V>
void gemmTiles(const V& v, emu::Block& blk, const Mat& A, const Mat& B, Mat& C,
               std::chrono::microseconds lastRowDelay = std::chrono::microseconds(0)) {
  const uint32_t bm = v.shape.tile.y, bn = v.shape.tile.x, bk = v.shape.tile.z ? v.shape.tile.z : 8;
  for (;;) {
    const TileWork w = emu::tile(v, blk);
    if (!w.valid) return;
    if (w.tile.y + 1 == v.shape.grid.y) std::this_thread::sleep_for(lastRowDelay);
    std::vector<double> acc(size_t(bm) * bn, 0.0);
    for (uint32_t k0 = 0; k0 < uint32_t(A.cols); k0 += bk) {
      emu::wait(v, w, Read{k0, w.tile.y * bm, 0, 0});
      for (uint32_t i = 0; i < bm; ++i)
        for (uint32_t j = 0; j < bn; ++j) {
          const int r = w.tile.y * bm + i, c = w.tile.x * bn + j;
          if (r >= A.rows || c >= B.cols) continue;
          for (uint32_t k = k0; k < std::min<uint32_t>(k0 + bk, A.cols); ++k) acc[i * bn + j] += A.at(r, k) * B.at(k, c);
        }
    }
    for (uint32_t i = 0; i < bm; ++i)
      for (uint32_t j = 0; j < bn; ++j) {
        const int r = w.tile.y * bm + i, c = w.tile.x * bn + j;
        if (r < C.rows && c < C.cols) C.at(r, c) = acc[i * bn + j];
      }
    std::this_thread::yield();
    emu::post(v, w);
    if (v.ticketsPerRun == v.numTiles) return;
  }
}

struct Variant {
  LaunchMode mode;
  int opts;
  bool columnMajor;
  bool persistent;
};

std::string describe(const Variant& v, const char* policy) {
  return std::string(policy) + " mode=" + toString(v.mode) + " opts=" + std::to_string(v.opts) +
         (v.columnMajor ? " column-major" : " row-major") + (v.persistent ? " persistent" : "");
}

std::vector<Variant> variants(bool singleWriter) {
  std::vector<Variant> out;
  for (LaunchMode m : {LaunchMode::Serial, LaunchMode::Streams, LaunchMode::Pdl})
    for (int opts : {int(NoOptimization), int(NoAtomicAdd), int(AvoidCustomOrder), int(AvoidWaitKernel),
                     int(ReorderTileLoads)})
      for (bool col : {false, true})
        for (bool persistent : {false, true}) {
          if ((opts & NoAtomicAdd) && !singleWriter) continue;
          out.push_back({m, opts, col, persistent});
        }
  return out;
}

// Three chained GEMMs: C1 = A B1 (NoSync -> P), C2 = C1 B2 (P -> P), C3 = C2 B3 (P -> NoSync).
template <class P>
void runGemmChain(const P& pol, const char* name, const Variant& var, uint32_t runs = 3) {
  SCOPED_TRACE(describe(var, name));
  const int M = 24, K0 = 16, N1 = 32, N2 = 24, N3 = 16;
  const Dim3 t1(8, 8, 8), t2(8, 8, 8), t3(8, 8, 8);
  Stage<policy::NoSync, P, HostMemory> s1("gemm1", Dim3(N1 / 8, M / 8), t1, {}, pol, var.opts & ~AvoidWaitKernel);
  Stage<P, P, HostMemory> s2("gemm2", Dim3(N2 / 8, M / 8), t2, pol, pol, var.opts);
  Stage<P, policy::NoSync, HostMemory> s3("gemm3", Dim3(N3 / 8, M / 8), t3, pol, {}, var.opts & ~NoAtomicAdd);
  if (var.columnMajor) {
    s1.setOrder(ColumnMajorOrder{});
    s2.setOrder(ColumnMajorOrder{});
    s3.setOrder(ColumnMajorOrder{});
  }
  pair(s1, s2);
  pair(s2, s3);
  std::mt19937 rng(1234 + var.opts);
  emu::Emulator emu({3, 2});
  emu::Pipeline pipe(emu, var.mode);
  for (uint32_t run = 0; run < runs; ++run) {
    Mat A = randomMat(M, K0, rng), B1 = randomMat(K0, N1, rng), B2 = randomMat(N1, N2, rng), B3 = randomMat(N2, N3, rng);
    Mat C1(M, N1), C2(M, N2), C3(M, N3);
    for (Mat* m : {&C1, &C2, &C3}) std::fill(m->v.begin(), m->v.end(), std::nan(""));
    const Dim3 pgrid = var.persistent ? Dim3(2) : Dim3(0, 0, 0);
    pipe.launch(s1, [&](const auto& v, emu::Block& b) { gemmTiles(v, b, A, B1, C1); }, pgrid, var.persistent);
    pipe.launch(s2, [&](const auto& v, emu::Block& b) { gemmTiles(v, b, C1, B2, C2); }, pgrid, var.persistent);
    pipe.launch(s3, [&](const auto& v, emu::Block& b) { gemmTiles(v, b, C2, B3, C3); }, pgrid, var.persistent);
    pipe.finish();
    const emu::Report rep = emu.run(30s);
    ASSERT_TRUE(rep.ok) << rep.message;
    const Mat R1 = reference(A, B1), R2 = reference(R1, B2), R3 = reference(R2, B3);
    ASSERT_EQ(C1.v, R1.v) << "run " << run;
    ASSERT_EQ(C2.v, R2.v) << "run " << run;
    ASSERT_EQ(C3.v, R3.v) << "run " << run;
  }
}

// Copy chain: the producer writes X, the consumer copies whole rows it reads
// step by step (k over X's columns) into Y, shifted by one.
template <class P>
void runCopyChain(const P& pol, const char* name, const Variant& var, Dim3 pg, Dim3 pt, Dim3 cg, Dim3 ct,
                  uint32_t readCols) {
  SCOPED_TRACE(describe(var, name));
  Stage<policy::NoSync, P, HostMemory> prod("copy-prod", pg, pt, {}, pol, var.opts & ~AvoidWaitKernel);
  Stage<P, policy::NoSync, HostMemory> cons("copy-cons", cg, ct, pol, {}, var.opts & ~NoAtomicAdd);
  if (var.columnMajor) prod.setOrder(ColumnMajorOrder{});
  pair(prod, cons);
  const uint32_t rows = pg.y * pt.y, cols = pg.x * pt.x;
  std::vector<int64_t> X(size_t(rows) * cols), Y(size_t(rows) * readCols);
  emu::Emulator emu({2, 2});
  emu::Pipeline pipe(emu, var.mode);
  for (uint32_t run = 1; run <= 3; ++run) {
    std::fill(Y.begin(), Y.end(), -1);
    pipe.launch(prod, [&](const auto& v, emu::Block& b) {
      const TileWork w = emu::tile(v, b);
      for (uint32_t r = 0; r < pt.y; ++r)
        for (uint32_t c = 0; c < pt.x; ++c) {
          const size_t i = size_t(w.tile.y * pt.y + r) * cols + w.tile.x * pt.x + c;
          X[i] = int64_t(run) * 1000000 + int64_t(i);
        }
      std::this_thread::yield();
      emu::post(v, w);
    });
    pipe.launch(cons, [&](const auto& v, emu::Block& b) {
      const TileWork w = emu::tile(v, b);
      if (w.tile.x != 0) return;  // column 0 of the consumer grid copies the rows
      for (uint32_t k0 = 0; k0 < readCols; k0 += ct.z) {
        emu::wait(v, w, Read{k0, w.tile.y * ct.y, 0, 0});
        for (uint32_t r = w.tile.y * ct.y; r < std::min(rows, (w.tile.y + 1) * ct.y); ++r)
          for (uint32_t c = k0; c < std::min(readCols, k0 + ct.z); ++c) Y[size_t(r) * readCols + c] = X[size_t(r) * cols + c] + 1;
      }
    });
    pipe.finish();
    const emu::Report rep = emu.run(30s);
    ASSERT_TRUE(rep.ok) << rep.message;
    for (uint32_t r = 0; r < rows; ++r)
      for (uint32_t c = 0; c < readCols; ++c)
        ASSERT_EQ(Y[size_t(r) * readCols + c], int64_t(run) * 1000000 + int64_t(r) * cols + c + 1)
            << "run " << run << " at (" << r << "," << c << ")";
  }
}

}  // namespace

TEST(EmulatorChain, TileSync) {
  for (const Variant& v : variants(true)) runGemmChain(policy::TileSync{}, "TileSync", v);
}
TEST(EmulatorChain, RowSync) {
  for (const Variant& v : variants(false)) runGemmChain(policy::RowSync{}, "RowSync", v);
}
TEST(EmulatorChain, BatchedRowSync) {
  for (const Variant& v : variants(false)) runGemmChain(policy::BatchedRowSync{2}, "BatchedRowSync", v);
}

TEST(EmulatorCopy, EveryPolicy) {
  for (const Variant& v : variants(true)) {
    if (v.persistent) continue;
    runCopyChain(policy::TileSync{}, "TileSync", v, Dim3(4, 5), Dim3(4, 2), Dim3(2, 5), Dim3(4, 2, 2), 16);
    runCopyChain(policy::StridedTileSync{2, 2}, "StridedTileSync", v, Dim3(4, 5), Dim3(4, 2), Dim3(2, 5),
                 Dim3(4, 2, 4), 8);
    if (!(v.opts & NoAtomicAdd)) {
      runCopyChain(policy::RowSync{}, "RowSync", v, Dim3(4, 5), Dim3(4, 2), Dim3(2, 5), Dim3(4, 2, 2), 16);
      runCopyChain(policy::BatchedRowSync{3}, "BatchedRowSync", v, Dim3(4, 5), Dim3(4, 2), Dim3(2, 5),
                   Dim3(4, 2, 2), 16);
    }
  }
}

TEST(EmulatorCopy, Conv2DTileSyncWithHalo) {
  // A 3x3 "convolution" consumer reading shifted pixel rows of the producer.
  policy::Conv2DTileSync cv;
  cv.C = 8;
  cv.W = 4;
  const Dim3 pg(2, 8), pt(4, 4);  // 32 pixels x 8 channels
  Stage<policy::NoSync, policy::Conv2DTileSync, HostMemory> prod("conv1", pg, pt, {}, cv);
  Stage<policy::Conv2DTileSync, policy::NoSync, HostMemory> cons("conv2", Dim3(1, 8), Dim3(4, 4, 4), cv);
  pair(prod, cons);
  std::vector<int64_t> X(32 * 8);
  std::vector<int64_t> sum(32);
  for (LaunchMode mode : {LaunchMode::Streams, LaunchMode::Pdl}) {
    emu::Emulator emu({2, 1});
    emu::Pipeline pipe(emu, mode);
    for (int run = 1; run <= 2; ++run) {
      pipe.launch(prod, [&](const auto& v, emu::Block& b) {
        const TileWork w = emu::tile(v, b);
        for (uint32_t r = 0; r < 4; ++r)
          for (uint32_t c = 0; c < 4; ++c) X[(w.tile.y * 4 + r) * 8 + w.tile.x * 4 + c] = run * 1000 + 1;
        std::this_thread::sleep_for(200us);
        emu::post(v, w);
      });
      pipe.launch(cons, [&](const auto& v, emu::Block& b) {
        const TileWork w = emu::tile(v, b);
        for (uint32_t r = 0; r < 4; ++r) sum[w.tile.y * 4 + r] = 0;
        for (uint32_t k0 = 0; k0 < 9 * 8; k0 += 4) {
          emu::wait(v, w, Read{k0, w.tile.y * 4, 0, 0});
          const int rs = k0 / 8, off = (rs / 3 - 1) * 4 + (rs % 3 - 1);
          for (uint32_t r = 0; r < 4; ++r) {
            const int p = int(w.tile.y * 4 + r) + off;
            if (p < 0 || p >= 32) continue;
            for (uint32_t c = k0 % 8; c < k0 % 8 + 4; ++c) sum[w.tile.y * 4 + r] += X[p * 8 + c];
          }
        }
      });
      pipe.finish();
      const auto rep = emu.run(30s);
      ASSERT_TRUE(rep.ok) << rep.message;
      for (int p = 0; p < 32; ++p) {
        int taps = 0;
        for (int o : {-5, -4, -3, -1, 0, 1, 3, 4, 5}) taps += (p + o >= 0 && p + o < 32);
        ASSERT_EQ(sum[p], int64_t(taps) * 8 * (run * 1000 + 1)) << toString(mode) << " pixel " << p;
      }
    }
  }
}

TEST(EmulatorChain, SemaphoresWrapAround) {
  // Start both stages as if 2^32 / 4 - 1 runs had happened: the semaphores
  // (4 posts per row per run) wrap during the next runs, which must stay exact.
  const uint64_t runsDone = (1ull << 32) / 4 - 1;
  Stage<policy::NoSync, policy::RowSync, HostMemory> prod("prod", Dim3(4, 3), Dim3(8, 8, 1));
  Stage<policy::RowSync, policy::NoSync, HostMemory> cons("cons", Dim3(2, 3), Dim3(8, 8, 8));
  pair(prod, cons);
  *prod.ticketCounter() = runsDone * prod.numTiles();
  *cons.ticketCounter() = runsDone * cons.numTiles();
  for (uint32_t s = 0; s < prod.semaphoreCount(); ++s) prod.semaphores()[s] = uint32_t(runsDone * 4);
  std::mt19937 rng(7);
  emu::Emulator emu({2, 1});
  emu::Pipeline pipe(emu, LaunchMode::Pdl);
  for (int run = 0; run < 3; ++run) {
    Mat A = randomMat(24, 8, rng), B1 = randomMat(8, 32, rng), B2 = randomMat(32, 16, rng);
    Mat C1(24, 32), C2(24, 16);
    pipe.launch(prod, [&](const auto& v, emu::Block& b) { gemmTiles(v, b, A, B1, C1); });
    pipe.launch(cons, [&](const auto& v, emu::Block& b) { gemmTiles(v, b, C1, B2, C2); });
    pipe.finish();
    const auto rep = emu.run(30s);
    ASSERT_TRUE(rep.ok) << rep.message;
    ASSERT_EQ(C2.v, reference(reference(A, B1), B2).v) << "run " << run;
  }
  EXPECT_LT(prod.semaphores()[0], 16u);  // it did wrap
}

// Runs queued back to back, the producer flagged WaitsForPriorGrid (a Pdl
// pipeline then launches it as a programmatic dependent of the previous
// run): each run's result is exact and nothing deadlocks.
TEST(EmulatorChain, FirstStageWaitsForPriorGrid) {
  Stage<policy::NoSync, policy::RowSync, HostMemory> prod("prod", Dim3(4, 3), Dim3(8, 8, 1), {}, {},
                                                          WaitsForPriorGrid);
  Stage<policy::RowSync, policy::NoSync, HostMemory> cons("cons", Dim3(2, 3), Dim3(8, 8, 8));
  pair(prod, cons);
  std::mt19937 rng(11);
  emu::Emulator emu({2, 1});
  emu::Pipeline pipe(emu, LaunchMode::Pdl);
  constexpr int kRuns = 3;
  std::vector<Mat> A, B1, B2, C1, C2;
  for (int run = 0; run < kRuns; ++run) {
    A.push_back(randomMat(24, 8, rng)), B1.push_back(randomMat(8, 32, rng)), B2.push_back(randomMat(32, 16, rng));
    C1.emplace_back(24, 32), C2.emplace_back(24, 16);
  }
  for (int run = 0; run < kRuns; ++run) {
    pipe.launch(prod, [&, run](const auto& v, emu::Block& b) { gemmTiles(v, b, A[run], B1[run], C1[run]); });
    pipe.launch(cons, [&, run](const auto& v, emu::Block& b) { gemmTiles(v, b, C1[run], B2[run], C2[run]); });
    pipe.finish();
  }
  const auto rep = emu.run(30s);
  ASSERT_TRUE(rep.ok) << rep.message;
  for (int run = 0; run < kRuns; ++run)
    EXPECT_EQ(C2[run].v, reference(reference(A[run], B1[run]), B2[run]).v) << "run " << run;
}

TEST(EmulatorDeadlock, ConsumerDispatchedFirstIsReported) {
  Stage<policy::NoSync, policy::RowSync, HostMemory> prod("gemm1", Dim3(4, 3), Dim3(8, 8, 1));
  Stage<policy::RowSync, policy::NoSync, HostMemory> cons("gemm2", Dim3(4, 3), Dim3(8, 8, 8));
  pair(prod, cons);
  emu::Emulator emu({2, 1});
  const uint32_t s = emu.createStream();
  const auto pv = prod.view();
  const auto cv = cons.view();
  emu.launch(s, "gemm2", cons.shape().grid, [cv](emu::Block& b) {
    const TileWork w = emu::tile(cv, b);
    emu::wait(cv, w, Read{0, w.tile.y * 8, 0, 0});
  });
  emu.launch(s, "gemm1", prod.shape().grid, [pv](emu::Block& b) { emu::post(pv, emu::tile(pv, b)); });
  const auto rep = emu.run(20s);
  ASSERT_FALSE(rep.ok);
  EXPECT_TRUE(rep.deadlock) << rep.message;
  ASSERT_EQ(rep.waiters.size(), 2u);
  EXPECT_EQ(rep.waiters[0].stage, "gemm2");
  EXPECT_EQ(rep.waiters[0].info.expected, 4u);
  EXPECT_EQ(rep.waiters[0].info.seen, 0u);
  EXPECT_NE(rep.message.find("semaphore 0 for 4, sees 0"), std::string::npos) << rep.message;
  EXPECT_NE(rep.message.find("kernel 'gemm1'"), std::string::npos) << rep.message;
}

// Streams mode with the producer's stream held up (a host callback): without
// the wait kernel, consumer blocks take every slot first and the producer can
// never run; with it, the consumer's stream waits for the producer to start.
void runDelayedProducer(int consumerOpts, bool expectDeadlock) {
  Stage<policy::NoSync, policy::TileSync, HostMemory> prod("gemm1", Dim3(4, 4), Dim3(8, 8, 1));
  Stage<policy::TileSync, policy::NoSync, HostMemory> cons("gemm2", Dim3(4, 4), Dim3(8, 8, 8), {}, {}, consumerOpts);
  pair(prod, cons);
  emu::Emulator emu({2, 2});
  emu::Pipeline pipe(emu, LaunchMode::Streams);
  emu.hostDelay(pipe.streamAt(0), 30ms);
  pipe.launch(prod, [](const auto& v, emu::Block& b) { emu::post(v, emu::tile(v, b)); });
  pipe.launch(cons, [](const auto& v, emu::Block& b) {
    const TileWork w = emu::tile(v, b);
    for (uint32_t k = 0; k < 32; k += 8) emu::wait(v, w, Read{k, w.tile.y * 8, 0, 0});
  });
  pipe.finish();
  const auto rep = emu.run(20s);
  EXPECT_EQ(rep.deadlock, expectDeadlock) << rep.message;
  EXPECT_EQ(rep.ok, !expectDeadlock) << rep.message;
  if (expectDeadlock) {
    EXPECT_EQ(rep.waiters.size(), 4u) << rep.message;
  }
}

TEST(EmulatorDeadlock, WaitKernelLeftOutIsReported) { runDelayedProducer(AvoidWaitKernel, true); }
TEST(EmulatorDeadlock, WaitKernelPreventsIt) { runDelayedProducer(NoOptimization, false); }

// One producer feeding two consumers, and one consumer reading two producers
// (its inputs 0 and 1), in every launch mode over several runs.
TEST(EmulatorChain, FanOutAndFanIn) {
  const int M = 24, K0 = 16, N = 32, N2 = 16;
  const Dim3 tile(8, 8, 8);
  for (LaunchMode mode : {LaunchMode::Serial, LaunchMode::Streams, LaunchMode::Pdl}) {
    SCOPED_TRACE(toString(mode));
    Stage<policy::NoSync, policy::TileSync, HostMemory> p1("p1", Dim3(N / 8, M / 8), tile);
    Stage<policy::NoSync, policy::TileSync, HostMemory> p2("p2", Dim3(N / 8, M / 8), tile);
    Stage<policy::TileSync, policy::NoSync, HostMemory> fanOut("fan-out", Dim3(N2 / 8, M / 8), tile);
    Stage<policy::TileSync, policy::NoSync, HostMemory> fanIn("fan-in", Dim3(N2 / 8, M / 8), tile);
    pair(p1, fanOut);  // p1 feeds two consumers
    pair(p1, fanIn);   // fan-in input 0
    pair(p2, fanIn);   // fan-in input 1
    std::mt19937 rng(21);
    emu::Emulator emu({3, 1});
    emu::Pipeline pipe(emu, mode);
    for (int run = 0; run < 3; ++run) {
      Mat A = randomMat(M, K0, rng), B1 = randomMat(K0, N, rng), B2 = randomMat(K0, N, rng), W = randomMat(N, N2, rng);
      Mat X1(M, N), X2(M, N), Y(M, N2), Z(M, N2);
      std::fill(X2.v.begin(), X2.v.end(), std::nan(""));
      std::fill(Y.v.begin(), Y.v.end(), std::nan(""));
      std::fill(Z.v.begin(), Z.v.end(), std::nan(""));
      pipe.launch(p1, [&](const auto& v, emu::Block& b) { gemmTiles(v, b, A, B1, X1); });
      // p2's last row finishes late, so fan-in blocks run while it is missing.
      pipe.launch(p2, [&](const auto& v, emu::Block& b) { gemmTiles(v, b, A, B2, X2, 20ms); });
      pipe.launch(fanOut, [&](const auto& v, emu::Block& b) { gemmTiles(v, b, X1, W, Y); });
      // Z = (X1 + X2) W: each step waits on both inputs before reading them.
      pipe.launch(fanIn, [&](const auto& v, emu::Block& b) {
        const TileWork w = emu::tile(v, b);
        for (uint32_t i = 0; i < 8; ++i)
          for (uint32_t j = 0; j < 8; ++j) {
            const int r = w.tile.y * 8 + i, c = w.tile.x * 8 + j;
            double acc = 0;
            for (uint32_t k0 = 0; k0 < uint32_t(N); k0 += 8) {
              emu::wait(v, w, Read{k0, w.tile.y * 8, 0, 0}, 0);
              emu::wait(v, w, Read{k0, w.tile.y * 8, 0, 0}, 1);
              for (uint32_t k = k0; k < k0 + 8; ++k) acc += (X1.at(r, k) + X2.at(r, k)) * W.at(k, c);
            }
            Z.at(r, c) = acc;
          }
      });
      pipe.finish();
      const auto rep = emu.run(30s);
      ASSERT_TRUE(rep.ok) << rep.message;
      const Mat R1 = reference(A, B1), R2 = reference(A, B2);
      Mat S(M, N);
      for (size_t i = 0; i < S.v.size(); ++i) S.v[i] = R1.v[i] + R2.v[i];
      ASSERT_EQ(Y.v, reference(R1, W).v) << "run " << run;
      ASSERT_EQ(Z.v, reference(S, W).v) << "run " << run;
    }
  }
}
