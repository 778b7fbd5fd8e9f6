// The GEMM's fused epilogue: one consumer warpgroup's 64 x WN accumulator
// (wgmma m64nWN fragment layout) -> bias / GELU / SwiGLU / residual in fp32 ->
// rounded to T -> C.
//
// Stores go through shared memory, one 16-row x 64-column chunk per warp at a
// time: stmatrix writes the chunk as rows into a per-warp scratch buffer laid
// out as the 128-byte swizzle, and one lane hands it to the copy engine
// (cp.async.bulk.tensor through a tensor map of C), which writes C while the
// warp goes on to the next chunk and tile. The scratch is private to its
// warp, so no barrier beyond __syncwarp is needed. Measured per tile
// (docs/gemm.md): a shuffle transpose costs ~1500 instructions per warp;
// 16-byte stores from the scratch hold the warps 1.9-2.1 us per 128x256 tile
// where all blocks store at once, the TMA stores 1.6-1.7 us.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cuda/ptx>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/kernel/arch.cuh"
#include "kernels/gemm/kernel/params.cuh"

namespace cusync_gemm::detail {

// Bytes of scratch per consumer warp: 16 rows x 128 bytes.
constexpr int kScratchPerWarp = 16 * 128;

template <class T>
struct TypeOps;
template <>
struct TypeOps<__nv_bfloat16> {
  using T2 = __nv_bfloat162;
  static __device__ __forceinline__ T2 pack(float a, float b) { return __floats2bfloat162_rn(a, b); }
  static __device__ __forceinline__ float2 unpack(T2 v) { return __bfloat1622float2(v); }
};
template <>
struct TypeOps<__half> {
  using T2 = __half2;
  static __device__ __forceinline__ T2 pack(float a, float b) { return __floats2half2_rn(a, b); }
  static __device__ __forceinline__ float2 unpack(T2 v) { return __half22float2(v); }
};

// tanh on the special-function unit (tanh.approx.f32; no CCCL wrapper): one
// instruction, relative error about 2^-11, below the bf16 rounding of the
// result. The accurate tanhf is a long instruction sequence per element,
// run by the consumer warps while no MMA is in flight.
__device__ __forceinline__ float tanhApprox(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float geluTanh(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
  return 0.5f * x * (1.0f + tanhApprox(u));
}
// x sigmoid(x) = x (1 + tanh(x / 2)) / 2: one tanh instead of an exp and a division.
__device__ __forceinline__ float silu(float x) { return 0.5f * x * (1.0f + tanhApprox(0.5f * x)); }

template <class T2>
__device__ __forceinline__ uint32_t bits(T2 v) {
  return *reinterpret_cast<const uint32_t*>(&v);
}

// Four 8x8 b16 matrices from registers to shared memory; lane l gives the
// address of row l % 8 of matrix l / 8 (no CCCL wrapper for stmatrix).
__device__ __forceinline__ void stmatrix4(uint32_t addr, uint32_t m0, uint32_t m1, uint32_t m2, uint32_t m3) {
#if CUSYNC_GEMM_SM90A
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(m0), "r"(m1),
               "r"(m2), "r"(m3)
               : "memory");
#endif
}

__device__ __forceinline__ uint4 ldShared16(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}

// Scratch address of 16-byte unit u of row r: units are XOR-swizzled by the
// row so that the 8 rows of one stmatrix matrix, and the 4 rows of one read,
// fall in different banks.
__device__ __forceinline__ uint32_t scratchAt(uint32_t base, int r, int u) {
  return base + static_cast<uint32_t>(r * 128 + ((u ^ (r & 7)) << 4));
}

// A split output (GemmArgs::splitN > 0): output columns [0, splitN) go to
// C (row stride splitN), columns [splitN, nOut) to C2 (row stride
// nOut - splitN). splitN is a multiple of 8, so an 8-column group lies in
// one part; a 64-column chunk across the split goes out in 16-byte row
// stores instead of a TMA store (whose box cannot start left of C2).
struct SplitOutput {
  void* C2 = nullptr;
  const CUtensorMap* tmC2 = nullptr;
  int64_t splitN = 0;
};

// Where output element (row, col) of an 8-column group goes.
template <class T>
__device__ __forceinline__ T* outputAt(T* C, const SplitOutput& so, int64_t row, int64_t col, int64_t nOut) {
  if (so.splitN > 0)
    return col < so.splitN ? C + row * so.splitN + col
                           : static_cast<T*>(so.C2) + row * (nOut - so.splitN) + (col - so.splitN);
  return C + row * nOut + col;
}

// Stores output groups [g0, g0 + 2 * PAIRS) (8 columns each) of this warp's
// 16 rows: stmatrix into the scratch, then 16-byte row stores. out[2 g + h]
// holds group g, rows lane / 4 + 8 h, as a packed pair.
template <class T, int PAIRS, int NREG>
__device__ __forceinline__ void storeChunk(const uint32_t (&out)[NREG], int g0, uint32_t scratch, T* C,
                                           const SplitOutput& so, int64_t row0, int64_t col0, int64_t M, int64_t nOut) {
  constexpr int kUnits = 2 * PAIRS;  // 16-byte units per row in this chunk
  const int lane = threadIdx.x % 32;
  const int m = lane / 8;  // which of the four matrices this lane addresses
#pragma unroll
  for (int p = 0; p < PAIRS; ++p) {
    const int g = g0 + 2 * p;
    const int r = (m & 1) * 8 + lane % 8;
    stmatrix4(scratchAt(scratch, r, 2 * p + (m >> 1)), out[2 * g], out[2 * g + 1], out[2 * g + 2], out[2 * g + 3]);
  }
  __syncwarp();
  constexpr int kRowsPerStep = 32 / kUnits;
#pragma unroll
  for (int i = 0; i < 16 / kRowsPerStep; ++i) {
    const int r = i * kRowsPerStep + lane / kUnits;
    const int u = lane % kUnits;
    const uint4 v = ldShared16(scratchAt(scratch, r, u));
    const int64_t row = row0 + r;
    const int64_t col = col0 + 8 * (g0 + u);
    if (row < M && col < nOut) *reinterpret_cast<uint4*>(outputAt(C, so, row, col, nOut)) = v;
  }
  __syncwarp();  // the next chunk overwrites the scratch
}

// The same 16 x 64 chunk through TMA: stmatrix into one of the warp's
// scratch buffers (laid out as the 128-byte swizzle of a 64-column x 16-row
// box of tmC), then one lane stores the box with cp.async.bulk.tensor and
// goes on; the copy engine reads the buffer and writes C while the warp
// continues (the next tile's MMAs included). Out-of-range rows and columns
// are clipped by the copy. Before a buffer is written again, its previous
// store must have read it: at most NB - 1 of the warp's bulk groups pending.
template <int NB, class T, int NREG>
__device__ __forceinline__ void storeChunkTma(const uint32_t (&out)[NREG], int g0, unsigned char* buf,
                                              const CUtensorMap* tmC, const SplitOutput& so, int64_t row0,
                                              int64_t col0) {
#if CUSYNC_GEMM_SM90A
  const int lane = threadIdx.x % 32;
  const int m = lane / 8;
  if (lane == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<NB - 1>());
  __syncwarp();
  const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(buf));
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    const int g = g0 + 2 * p;
    const int r = (m & 1) * 8 + lane % 8;
    stmatrix4(scratchAt(base, r, 2 * p + (m >> 1)), out[2 * g], out[2 * g + 1], out[2 * g + 2], out[2 * g + 3]);
  }
  cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);  // the copy engine reads what stmatrix wrote
  __syncwarp();
  if (lane == 0) {
    const int64_t col = col0 + 8 * g0;
    const bool second = so.splitN > 0 && col >= so.splitN;  // the chunk lies in C2's part
    const int32_t c[2] = {static_cast<int32_t>(second ? col - so.splitN : col), static_cast<int32_t>(row0)};
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_global, cuda::ptx::space_shared, second ? so.tmC2 : tmC, c,
                                    buf);
    cuda::ptx::cp_async_bulk_commit_group();
  }
#endif
}

// Epilogue for one consumer warpgroup: rows [rowBase, rowBase + 64) of C, and
// accumulator columns [n0, n0 + WN) (interleaved gate/up for SwiGLU, which
// writes output columns [n0 / 2, n0 / 2 + WN / 2)). `scratch` is this warp's
// kScratchPerWarp bytes of shared memory.
// Whole 64-column chunks go out through TMA (tmC, NB scratch buffers of
// kScratchPerWarp bytes per warp); the rest as below.
// `turn` counts this warp's TMA chunks over all its tiles: chunk t uses
// buffer t mod NB, so that the one store left pending by the wait before it
// (NB - 1 = 1) is always the other buffer's, also across tiles with an odd
// number of chunks (a tile's first chunk would otherwise reuse the buffer
// of the previous tile's last, still pending, store).
template <class T, int WN, Epilogue E, int NB>
__device__ __forceinline__ void epilogue(float (&acc)[WN / 2], T* C, const EpilogueParams& p, int64_t rowBase, int64_t n0,
                                         unsigned char* scratch, const CUtensorMap* tmC, const SplitOutput& so,
                                         uint32_t& turn) {
  using Ops = TypeOps<T>;
  using T2 = typename Ops::T2;
  constexpr bool kGlu = E == Epilogue::SwiGLU;
  constexpr int WO = kGlu ? WN / 2 : WN;  // output columns
  static_assert(WO % 8 == 0, "output width of a warpgroup must be whole 8-column groups");
  const int t = threadIdx.x % 128;
  const int warp = t / 32, lane = t % 32;
  const int64_t row0 = rowBase + warp * 16;  // this warp's first row
  const int64_t rowA = row0 + lane / 4;      // this lane's rows: rowA, rowA + 8
  const int q2 = 2 * (lane % 4);
  const T2* bias = static_cast<const T2*>(p.bias);
  const int64_t nOut = kGlu ? p.N / 2 : p.N;

  uint32_t out[WO / 4];
  if constexpr (kGlu) {
#pragma unroll
    for (int g = 0; g < WO / 8; ++g) {
      // Accumulator groups 2g (gate) and 2g + 1 (up) hold the same output columns.
      const int64_t gcol = n0 + 16 * g + q2;
      float bg0 = 0.f, bg1 = 0.f, bu0 = 0.f, bu1 = 0.f;
      if (bias != nullptr && gcol < p.N) {
        const float2 bg = Ops::unpack(bias[gcol / 2]);
        const float2 bu = Ops::unpack(bias[(gcol + 8) / 2]);
        bg0 = bg.x, bg1 = bg.y, bu0 = bu.x, bu1 = bu.y;
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float g0 = acc[8 * g + 2 * h] + bg0, g1 = acc[8 * g + 2 * h + 1] + bg1;
        const float u0 = acc[8 * g + 4 + 2 * h] + bu0, u1 = acc[8 * g + 4 + 2 * h + 1] + bu1;
        out[2 * g + h] = bits(Ops::pack(silu(g0) * u0, silu(g1) * u1));
      }
    }
  } else {
#pragma unroll
    for (int g = 0; g < WO / 8; ++g) {
      const int64_t col = n0 + 8 * g + q2;
      float b0 = 0.f, b1 = 0.f;
      if constexpr (E != Epilogue::Identity) {
        if (bias != nullptr && col < p.N) {
          const float2 b = Ops::unpack(bias[col / 2]);
          b0 = b.x, b1 = b.y;
        }
      }
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float v0 = acc[4 * g + 2 * h] + b0, v1 = acc[4 * g + 2 * h + 1] + b1;
        if constexpr (E == Epilogue::Gelu) v0 = geluTanh(v0), v1 = geluTanh(v1);
        if constexpr (E == Epilogue::Residual || E == Epilogue::ResidualRelu) {
          const int64_t row = rowA + 8 * h;
          if (row < p.M && col < p.N) {
            const float2 r = Ops::unpack(static_cast<const T2*>(p.residual)[(row * p.N + col) / 2]);
            v0 += r.x, v1 += r.y;
          }
        }
        if constexpr (E == Epilogue::Relu || E == Epilogue::ResidualRelu) v0 = fmaxf(v0, 0.f), v1 = fmaxf(v1, 0.f);
        out[2 * g + h] = bits(Ops::pack(v0, v1));
      }
    }
  }

  const uint32_t sbase = static_cast<uint32_t>(__cvta_generic_to_shared(scratch));
  const int64_t col0 = kGlu ? n0 / 2 : n0;
#pragma unroll
  for (int c = 0; c < WO / 64; ++c) {
    const int64_t col = col0 + 64 * c;
    if (so.splitN > 0 && col < so.splitN && col + 64 > so.splitN) {
      // Every pending bulk store has read its buffer first, so that the
      // buffer rotation of the chunks after this one stays safe.
      if ((threadIdx.x % 32) == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>());
      __syncwarp();
      storeChunk<T, 4>(out, 8 * c, sbase + ((turn + c) % NB) * kScratchPerWarp, C, so, row0, col0, p.M, nOut);
    } else {
      storeChunkTma<NB, T>(out, 8 * c, scratch + ((turn + c) % NB) * kScratchPerWarp, tmC, so, row0, col0);
    }
  }
  // The rest (8-56 columns: tiles 96, 144, 168 or 176 wide, SwiGLU halves)
  // in 16-byte row stores through the scratch, 32 then 16 columns, and a last
  // 8-column group straight from the registers (4 bytes per lane and row).
  // It uses the next chunk's buffer without a bulk store of its own: its
  // stores are done before that chunk's stmatrix.
  constexpr int kRest = WO % 64;
  if constexpr (kRest >= 16) {
    const uint32_t b = (turn + WO / 64) % NB;
    if ((threadIdx.x % 32) == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<NB - 1>());
    __syncwarp();
    if constexpr (kRest >= 32) storeChunk<T, 2>(out, WO / 64 * 8, sbase + b * kScratchPerWarp, C, so, row0, col0, p.M, nOut);
    if constexpr (kRest % 32 >= 16)
      storeChunk<T, 1>(out, WO / 64 * 8 + (kRest >= 32 ? 4 : 0), sbase + b * kScratchPerWarp, C, so, row0, col0, p.M, nOut);
  }
  if constexpr (kRest % 16 == 8) {
    constexpr int g = WO / 8 - 1;
    const int64_t col = col0 + 8 * g + q2;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int64_t row = rowA + 8 * h;
      if (row < p.M && col < nOut) *reinterpret_cast<uint32_t*>(outputAt(C, so, row, col, nOut)) = out[2 * g + h];
    }
  }
  turn += WO / 64;
}

// A consumer warp's TMA stores: all of them finished writing C (before a
// post), or finished reading the scratch (before the block exits).
__device__ __forceinline__ void epilogueStoresDone() {
#if CUSYNC_GEMM_SM90A
  if ((threadIdx.x % 32) == 0) cuda::ptx::cp_async_bulk_wait_group(cuda::ptx::n32_t<0>());
  __syncwarp();
#endif
}
__device__ __forceinline__ void epilogueScratchFree() {
#if CUSYNC_GEMM_SM90A
  if ((threadIdx.x % 32) == 0) cuda::ptx::cp_async_bulk_wait_group_read(cuda::ptx::n32_t<0>());
  __syncwarp();
#endif
}

}  // namespace cusync_gemm::detail
