// Emulator runs of generated policies and orders: three chained GEMMs on host
// threads, through the real protocol, give exactly the reference result in
// every launch mode, run after run.
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "cusync/emu/pipeline.h"
#include "cusync/stage.h"
#include "small_chain.h"

namespace {

using namespace std::chrono_literals;
using cusync::HostMemory;
using cusync::Read;
using cusync::TileWork;
using cusync::policy::NoSync;

struct Mat {
  int rows, cols;
  std::vector<double> v;
  Mat(int r, int c) : rows(r), cols(c), v(size_t(r) * c, 0.0) {}
  double& at(int r, int c) { return v[size_t(r) * cols + c]; }
  double at(int r, int c) const { return v[size_t(r) * cols + c]; }
};

Mat random(int r, int c, std::mt19937& rng) {
  Mat m(r, c);
  std::uniform_int_distribution<int> d(-3, 3);
  for (double& x : m.v) x = d(rng);
  return m;
}

Mat multiply(const Mat& a, const Mat& b) {
  Mat c(a.rows, b.cols);
  for (int i = 0; i < a.rows; ++i)
    for (int j = 0; j < b.cols; ++j)
      for (int k = 0; k < a.cols; ++k) c.at(i, j) += a.at(i, k) * b.at(k, j);
  return c;
}

// One 8 x 8 output tile, waiting before each k-block of A as the spec says.
template <class V>
void gemmTile(const V& v, cusync::emu::Block& b, const Mat& A, const Mat& B, Mat& C) {
  const TileWork w = cusync::emu::tile(v, b);
  if (!w.valid) return;
  const uint32_t bm = v.shape.tile.y, bn = v.shape.tile.x, bk = v.shape.tile.z;
  std::vector<double> acc(bm * bn, 0.0);
  for (uint32_t k0 = 0; k0 < uint32_t(A.cols); k0 += bk) {
    cusync::emu::wait(v, w, Read{k0, w.tile.y * bm, 0, 0});
    for (uint32_t i = 0; i < bm; ++i)
      for (uint32_t j = 0; j < bn; ++j) {
        const int r = int(w.tile.y * bm + i), c = int(w.tile.x * bn + j);
        if (r >= A.rows || c >= B.cols) continue;
        for (uint32_t k = k0; k < k0 + bk && int(k) < A.cols; ++k) acc[i * bn + j] += A.at(r, int(k)) * B.at(int(k), c);
      }
  }
  std::this_thread::yield();  // give consumers a chance to read too early
  for (uint32_t i = 0; i < bm; ++i)
    for (uint32_t j = 0; j < bn; ++j) {
      const int r = int(w.tile.y * bm + i), c = int(w.tile.x * bn + j);
      if (r < C.rows && c < C.cols) C.at(r, c) = acc[i * bn + j];
    }
  cusync::emu::post(v, w);
}

TEST(GeneratedOnEmulator, GemmChainIsExact) {
  namespace g = small_chain;
  for (cusync::LaunchMode mode : {cusync::LaunchMode::Serial, cusync::LaunchMode::Streams, cusync::LaunchMode::Pdl}) {
    SCOPED_TRACE(cusync::toString(mode));
    cusync::Stage<NoSync, g::gemm1_out, HostMemory> s1("gemm1", g::gemm1_shape.grid, g::gemm1_shape.tile);
    cusync::Stage<g::gemm2_in, g::gemm2_out, HostMemory> s2("gemm2", g::gemm2_shape.grid, g::gemm2_shape.tile);
    cusync::Stage<g::gemm3_in, NoSync, HostMemory> s3("gemm3", g::gemm3_shape.grid, g::gemm3_shape.tile);
    s1.setOrder(g::gemm1_order{});
    s2.setOrder(g::gemm2_order{});
    s3.setOrder(g::gemm3_order{});
    cusync::pair(s1, s2);
    cusync::pair(s2, s3);
    std::mt19937 rng(7);
    cusync::emu::Emulator emu({3, 1});
    cusync::emu::Pipeline pipe(emu, mode);
    const int M = int(g::gemm1_shape.rows());
    for (int run = 0; run < 3; ++run) {
      const Mat A = random(M, 16, rng), B1 = random(16, 32, rng), B2 = random(32, 24, rng), B3 = random(24, 16, rng);
      Mat C1(M, 32), C2(M, 24), C3(M, 16);
      pipe.launch(s1, [&](const auto& v, cusync::emu::Block& b) { gemmTile(v, b, A, B1, C1); });
      pipe.launch(s2, [&](const auto& v, cusync::emu::Block& b) { gemmTile(v, b, C1, B2, C2); });
      pipe.launch(s3, [&](const auto& v, cusync::emu::Block& b) { gemmTile(v, b, C2, B3, C3); });
      pipe.finish();
      const cusync::emu::Report rep = emu.run(30s);
      ASSERT_TRUE(rep.ok) << rep.message;
      const Mat R1 = multiply(A, B1), R2 = multiply(R1, B2), R3 = multiply(R2, B3);
      ASSERT_EQ(C1.v, R1.v) << "run " << run;
      ASSERT_EQ(C2.v, R2.v) << "run " << run;
      ASSERT_EQ(C3.v, R3.v) << "run " << run;
    }
  }
}

}  // namespace
