// pairRunsAcrossModes: a producer GEMM stage posting through a policy and a
// consumer GEMM stage waiting on it, through the staged launch API. Included
// by the hook test files, one policy each, so that their many kernel
// instantiations compile in parallel.
#pragma once

#include <iterator>

#include "cusync/launch.h"
#include "cusync/policies.h"
#include "cusync/stage.h"
#include "kernels/gemm/gemm_staged.cuh"
#include "kernels/gemm/tests/gemm_test_util.h"

// The staged kernels of the four policy pairs below are compiled in units of
// their own (staged_instance.cu.in, one per family and pair), in parallel.
#define GEMM_TEST_EXTERN_PAIR(In, Out)                                     \
  CUSYNC_GEMM_EXTERN_FAMILY(Bf16NK, cusync::policy::In, cusync::policy::Out) \
  CUSYNC_GEMM_EXTERN_FAMILY(Bf16KN, cusync::policy::In, cusync::policy::Out) \
  CUSYNC_GEMM_EXTERN_FAMILY(F16NK, cusync::policy::In, cusync::policy::Out)  \
  CUSYNC_GEMM_EXTERN_FAMILY(F16KN, cusync::policy::In, cusync::policy::Out)
GEMM_TEST_EXTERN_PAIR(NoSync, RowSync)
GEMM_TEST_EXTERN_PAIR(RowSync, NoSync)
GEMM_TEST_EXTERN_PAIR(NoSync, TileSync)
GEMM_TEST_EXTERN_PAIR(TileSync, NoSync)
#undef GEMM_TEST_EXTERN_PAIR

namespace gemm_test {

// Posts per producer tile under RowSync in pairRunsAcrossModes: one per tile of
// the producer's row band (its stage grid's x for the M x N1 it runs).
inline uint32_t rowSyncPostsPerTile(TileConfig producer) {
  GemmArgs g;
  g.M = 300, g.N = 512;
  return stageGrid(g, producer).x;
}

// A producer GEMM posting through Out and a consumer GEMM waiting on it
// (In), five runs in a row through the launch modes in turn (Serial, Pdl,
// Streams, Pdl, Serial): stages that take static tiles (Serial, Pdl) and
// stages that take tickets (Streams, Pdl consumers with a fine policy) count
// the same runs, so the semaphores end at five runs' posts, every wait
// passes, and each run's result equals the same chain without sync bit for
// bit (the consumer's output poisoned before every run).
template <class Pol>
void pairRunsAcrossModes(TileConfig c1, TileConfig c2, int split1, int split2, uint32_t postsPerTile,
                         int consumerOpts = 0) {
  using namespace cusync::policy;
  const int M = 300, N1 = 512, K1 = 256, N2 = 256;
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<uint16_t> hA((size_t)M * K1), hW1((size_t)N1 * K1), hW2((size_t)N2 * N1);
  for (auto& x : hA) x = toBits(U(rng()), DType::BF16);
  for (auto& x : hW1) x = toBits(U(rng()) * 0.1f, DType::BF16);
  for (auto& x : hW2) x = toBits(U(rng()) * 0.1f, DType::BF16);
  Dev dA(hA.size() * 2), dW1(hW1.size() * 2), dW2(hW2.size() * 2), dX((size_t)M * N1 * 2), dY((size_t)M * N2 * 2),
      dY2((size_t)M * N2 * 2), dX2((size_t)M * N1 * 2);
  CK(cudaMemcpy(dA.p, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dW1.p, hW1.data(), hW1.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dW2.p, hW2.data(), hW2.size() * 2, cudaMemcpyHostToDevice));
  GemmArgs g1;
  g1.M = M, g1.N = N1, g1.K = K1, g1.A = dA.p, g1.B = dW1.p, g1.C = dX.p, g1.config = c1, g1.splitK = split1;
  GemmArgs g2;
  g2.M = M, g2.N = N2, g2.K = N1, g2.A = dX.p, g2.B = dW2.p, g2.C = dY.p, g2.config = c2, g2.splitK = split2;
  // The same chain without sync, once: every run must match it bit for bit.
  GemmArgs g1b = g1, g2b = g2;
  g1b.C = dX2.p;
  g2b.A = dX2.p;
  g2b.C = dY2.p;
  ASSERT_NO_THROW(gemm(g1b, nullptr));
  ASSERT_NO_THROW(gemm(g2b, nullptr));
  CK(cudaDeviceSynchronize());
  std::vector<uint16_t> y((size_t)M * N2), want((size_t)M * N2);
  CK(cudaMemcpy(want.data(), dY2.p, want.size() * 2, cudaMemcpyDeviceToHost));

  cusync::Stage<NoSync, Pol> s1("gemm1", stageGrid(g1, g1.config), stageTile(g1, g1.config));
  cusync::Stage<Pol, NoSync> s2("gemm2", stageGrid(g2, g2.config), stageTile(g2, g2.config), Pol{}, NoSync{},
                                consumerOpts);
  cusync::pair(s1, s2);
  s1.setOrder(cusync::GroupedOrder{8});
  const cusync::LaunchMode modes[] = {cusync::LaunchMode::Serial, cusync::LaunchMode::Pdl,
                                      cusync::LaunchMode::Streams, cusync::LaunchMode::Pdl,
                                      cusync::LaunchMode::Serial};
  for (cusync::LaunchMode mode : modes) {
    CK(cudaMemset(dY.p, 0xFF, (size_t)M * N2 * 2));
    cusync::Pipeline pipe(mode, nullptr);
    ASSERT_NO_THROW(gemm(g1, s1, pipe)) << cusync::toString(mode);
    ASSERT_NO_THROW(gemm(g2, s2, pipe)) << cusync::toString(mode);
    pipe.finish();
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(y.data(), dY.p, y.size() * 2, cudaMemcpyDeviceToHost));
    EXPECT_EQ(y, want) << "launch mode " << cusync::toString(mode);
  }
  std::vector<uint32_t> sems(s1.semaphoreCount());
  CK(cudaMemcpy(sems.data(), s1.semaphores(), sems.size() * 4, cudaMemcpyDeviceToHost));
  for (uint32_t s : sems) EXPECT_EQ(s, uint32_t(std::size(modes)) * postsPerTile);
}

}  // namespace gemm_test
