// A plain shared-memory tiled fp32 GEMM with cusync hooks: the smallest real
// kernel that shows where wait and post go. C[M,N] = A[M,K] * B[K,N], all
// row-major; A's rows are lda apart (lda >= K). One block of TILE x TILE threads computes one TILE x TILE tile
// per tile() call; with a persistent launch it loops until tile() says done.
#pragma once

#include <cusync/cusync.h>

namespace cusync::examples {

constexpr int kTile = 32;

template <class View>
__global__ void tiledGemm(View st, const float* A, const float* B, float* C, int M, int N, int K,
                          int lda) {
  __shared__ float As[kTile][kTile];
  __shared__ float Bs[kTile][kTile];
  __shared__ cusync::TileWork slot;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (;;) {
    const cusync::TileWork w = cusync::tile(st, &slot);
    if (!w.valid) break;
    const int row = w.tile.y * kTile + ty;
    const int col = w.tile.x * kTile + tx;
    float acc = 0.f;
    for (int k0 = 0; k0 < K; k0 += kTile) {
      // B does not depend on the producer: load it before waiting (ReorderTileLoads).
      Bs[ty][tx] = (k0 + ty < K && col < N) ? B[(size_t)(k0 + ty) * N + col] : 0.f;
      cusync::wait(st, w, cusync::Read{uint32_t(k0), uint32_t(w.tile.y * kTile), w.tile.z, 0});
      As[ty][tx] = (row < M && k0 + tx < K) ? A[(size_t)row * lda + k0 + tx] : 0.f;
      __syncthreads();
#pragma unroll 8
      for (int k = 0; k < kTile; ++k) acc += As[ty][k] * Bs[k][tx];
      __syncthreads();
    }
    if (row < M && col < N) C[(size_t)row * N + col] = acc;
    cusync::post(st, w);
    if (st.ticketsPerRun == st.numTiles) break;  // one tile per block
  }
}

}  // namespace cusync::examples
