// The convolution's A loader: the GEMM kernel's A loads (mainloop.cuh, the
// A loader members) through the TMA's im2col mode over the NHWC activations.
//
// One load fills a ring slot exactly as a tile-mode box of a row-major A
// would: BM consecutive output pixels (the GEMM's rows) x 64 channels, 128
// bytes per pixel in the 128-byte swizzle. The tensor map (host/conv_launch.cuh)
// carries the sliding window's bounding box, so the copy engine walks the
// pixels across row and image boundaries, applies the stride, and fills
// padding and channels past C with zeros; the load names the first pixel's
// window corner and the filter position (r, s) as the im2col offsets.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/conv/kernel/im2col_walk.h"
#include "kernels/gemm/kernel/arch.cuh"
#include "kernels/gemm/kernel/params.cuh"

namespace cusync_conv::detail {

using cusync_gemm::detail::Im2colGeometry;
using cusync_gemm::detail::kBK;

// One im2col TMA load into dst (shared): channels from c0 of the pixels
// whose window corner is (w, h) in image n, at filter position (fr, fs).
// No CCCL wrapper for the im2col form: coordinates {c, w, h, n}, offsets {s, r}.
__device__ __forceinline__ void im2colLoad(uint32_t dst, const CUtensorMap* map, int32_t c0, int32_t w, int32_t h,
                                           int32_t n, int32_t fr, int32_t fs, uint32_t full) {
#if CUSYNC_GEMM_SM90A
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(dst),
      "l"(map), "r"(c0), "r"(w), "r"(h), "r"(n), "r"(full), "h"(static_cast<uint16_t>(fs)),
      "h"(static_cast<uint16_t>(fr))
      : "memory");
#endif
}

// An im2col loader's walk members (mainloop.cuh): a unit's first k-block by
// division, the rest by steps of Step (im2col_walk.h).
template <class Step>
struct Im2colKWalk {
  using KStep = Step;
  template <class SP>
  __device__ __forceinline__ static KStep kStepAt(const SP& sp, int kb) {
    return Step::at(sp.im2col, kb);
  }
  template <class SP>
  __device__ __forceinline__ static void nextKStep(const SP& sp, KStep& k) {
    k.next(sp.im2col);
  }
};

struct Im2colA : Im2colKWalk<ChannelBlockStep> {
  static constexpr cusync_gemm::detail::ASmemLayout kLayout = cusync_gemm::detail::ASmemLayout::Swizzled128;
  // The window corner of this block's first output pixel, in input pixels.
  struct Rows {
    int32_t w, h, n;
  };
  template <class SP>
  __device__ __forceinline__ static Rows rows(const SP& sp, int32_t m0) {
    const Im2colGeometry& g = sp.im2col;
    const int32_t n = m0 / g.PQ, pq = m0 - n * g.PQ;
    const int32_t p = pq / g.Q, q = pq - p * g.Q;
    return Rows{q * g.strideW - g.padW, p * g.strideH - g.padH, n};
  }
  // The filter column k = (r S + s) C + c where k-block kb starts (B is the
  // KRSC filter as [K, R S C]; columns past a position's C channels meet
  // zero-filled A channels).
  template <class SP>
  __device__ __forceinline__ static int32_t kColumn(const SP& sp, int kb) {
    return ChannelBlockStep::at(sp.im2col, kb).kColumn();
  }
  template <class SP>
  __device__ __forceinline__ static constexpr int k16Steps(const SP&, int) {
    return kBK / 16;
  }
  template <class SP>
  __device__ __forceinline__ static void load(void* dst, const SP& sp, const Rows& r, const KStep& k, int,
                                              uint64_t* full) {
#if CUSYNC_GEMM_SM90A
    im2colLoad(static_cast<uint32_t>(__cvta_generic_to_shared(dst)), &sp.tmA, k.c0, r.w, r.h, r.n, k.tap.fr,
               k.tap.fs, static_cast<uint32_t>(__cvta_generic_to_shared(full)));
#endif
  }
};

// The loader of layers with 8 input channels (VGG's RGB input padded to 8):
// a k-block holds eight filter positions of 8 channels each, one TMA load
// of BM pixels x 16 bytes per position into an 8-column block of the slot
// (ASmemLayout::Blocks8), so reduction column k = (r S + s) 8 + c runs
// straight through the k-blocks as B's KRSC columns do. Through Im2colA a
// k-block would hold one position's 8 channels and 56 zeros, and 7/8 of
// the layer's MMAs and A bytes would be padding. The last k-block holds
// the positions left (one of 3x3's nine): it loads, and the consumers
// multiply, only the k16 steps (two positions each) that hold them, and a
// step's second position past R S loads the last position again, whose
// weights there (B's columns past R S 8) are zero-filled: it adds nothing
// and, being this window's own data, carries no NaN or Inf from elsewhere.
// The stage must not wait on its input (kColumn names the k-block's first
// position only); chains start with such a layer.
template <int BM>
struct Im2colPackedTapsA : Im2colKWalk<PackedTapsStep<kBK / 8>> {
  static constexpr cusync_gemm::detail::ASmemLayout kLayout = cusync_gemm::detail::ASmemLayout::Blocks8;
  static constexpr int kChannels = 8;
  static constexpr int kTapsPerKBlock = kBK / kChannels;
  static_assert(std::is_same_v<KStep, PackedTapsStep<kTapsPerKBlock>>, "the walk steps a k-block's positions");
  using Rows = Im2colA::Rows;
  template <class SP>
  __device__ __forceinline__ static Rows rows(const SP& sp, int32_t m0) {
    return Im2colA::rows(sp, m0);
  }
  template <class SP>
  __device__ __forceinline__ static int32_t kColumn(const SP&, int kb) {
    return kb * kBK;
  }
  // Two positions a k16 step: the steps that hold positions below R S.
  template <class SP>
  __device__ __forceinline__ static int k16Steps(const SP& sp, int kb) {
    const int left = sp.im2col.taps - kb * kTapsPerKBlock;
    return left >= kTapsPerKBlock ? kBK / 16 : (left + 1) / 2;
  }
  template <class SP>
  __device__ __forceinline__ static void load(void* dst, const SP& sp, const Rows& r, const KStep& k, int kb,
                                              uint64_t* full) {
#if CUSYNC_GEMM_SM90A
    const Im2colGeometry& g = sp.im2col;
    const uint32_t base = static_cast<uint32_t>(__cvta_generic_to_shared(dst));
    const uint32_t bar = static_cast<uint32_t>(__cvta_generic_to_shared(full));
    const int positions = 2 * k16Steps(sp, kb);
    FilterTap tap = k.tap;
#pragma unroll
    for (int t = 0; t < kTapsPerKBlock; ++t) {
      if (t >= positions) break;
      im2colLoad(base + static_cast<uint32_t>(t * BM * 16), &sp.tmA, 0, r.w, r.h, r.n, tap.fr, tap.fs, bar);
      if (tap.rs < g.taps - 1) tap.step(g);  // past R S: the last position again (see above)
    }
#endif
  }
};

}  // namespace cusync_conv::detail
