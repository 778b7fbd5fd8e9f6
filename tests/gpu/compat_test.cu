// A program written for the original cuSync API (CuStage, CuSync, the
// dim3 policies, the wait kernel on a second stream) runs unchanged.
#include <cusync/cusync.h>

#include "gpu_util.h"

using namespace cusync;

namespace {

constexpr int BLOCK = 32;
using ProdCuStage = CuStage<IdentityOrder, NoSync, TileSync<IdentityOrder, 1, 1>>;
using ConsCuStage = CuStage<IdentityOrder, TileSync<IdentityOrder, 1, 1>, NoSync>;

// C = A * B, with A and B square (n x n); waits on the producer's tile of A
// at every k-block, posts the finished tile of C.
template <typename Stage>
__global__ void matMul(Stage custage, float* C, const float* A, const float* B, int n) {
  __shared__ int tileSh[3];
  const dim3 tile = custage.tile(reinterpret_cast<dim3*>(&tileSh[0]));
  const int tx = threadIdx.x, ty = threadIdx.y;
  float acc = 0;
  for (int kb = 0; kb < n / BLOCK; ++kb) {
    __shared__ float As[BLOCK][BLOCK];
    __shared__ float Bs[BLOCK][BLOCK];
    dim3 waitTile = {unsigned(kb), tile.y, 1};
    custage.wait(waitTile);
    As[ty][tx] = A[(tile.y * BLOCK + ty) * n + kb * BLOCK + tx];
    Bs[ty][tx] = B[(kb * BLOCK + ty) * n + tile.x * BLOCK + tx];
    __syncthreads();
    for (int k = 0; k < BLOCK; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();
  }
  C[(tile.y * BLOCK + ty) * n + tile.x * BLOCK + tx] = acc;
  custage.post(tile);
}

}  // namespace

TEST(Compat, OriginalTwoMatMulProgram) {
  REQUIRE_GPU();
  const int n = 256;
  std::mt19937 rng(3);
  DeviceBuffer<float> A(n * n), B(n * n), D(n * n), C(n * n), E(n * n);
  const dim3 grid(n / BLOCK, n / BLOCK), threads(BLOCK, BLOCK);
  TileSync<IdentityOrder, 1, 1> sync;
  ProdCuStage prod(grid, threads, NoSync(), sync);
  ConsCuStage cons(grid, threads, sync, NoSync());
  ASSERT_EQ(CuSync::setProducerConsumerPair(prod, cons), CuSyncSuccess);
  ASSERT_TRUE(prod.isProducer() && !prod.isConsumer() && cons.isConsumer());
  cudaStream_t ps, cs;
  CUDA_OK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  CUDA_OK(cudaStreamCreateWithFlags(&ps, cudaStreamNonBlocking));
  for (int iter = 0; iter < 3; ++iter) {
    const auto hA = randomFloats(A.n, rng), hB = randomFloats(B.n, rng), hD = randomFloats(D.n, rng);
    CUDA_OK(A.upload(hA));
    CUDA_OK(B.upload(hB));
    CUDA_OK(D.upload(hD));
    CUDA_OK(C.poison());
    CUDA_OK(E.poison());
    matMul<ProdCuStage><<<grid, threads, 0, ps>>>(prod, C.ptr, A.ptr, B.ptr, n);
    ASSERT_EQ(prod.invokeWaitKernel(cs), CuSyncSuccess);
    matMul<ConsCuStage><<<grid, threads, 0, cs>>>(cons, E.ptr, C.ptr, D.ptr, n);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    prod.incrementIter();
    cons.incrementIter();
    const std::vector<double> dA(hA.begin(), hA.end());
    const auto rC = hostGemm(dA, hB, n, n, n, n);
    EXPECT_LT(relativeError(C.download(), rC), 1e-5);
    EXPECT_LT(relativeError(E.download(), hostGemm(rC, hD, n, n, n, n)), 1e-5);
  }
  cudaStreamDestroy(ps);
  cudaStreamDestroy(cs);
}
