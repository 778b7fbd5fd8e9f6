// The convolution tests' reference: conv2d forward in double on the host,
// with the epilogue, over the bf16 values the GPU reads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/conv/conv.h"

namespace conv_test {

// y[n][p][q][k] of a's geometry and epilogue; x, w, bias, residual as floats
// (bias and residual may be empty).
inline std::vector<double> referenceConv(const cusync_conv::Conv2dArgs& a, const std::vector<float>& x,
                                         const std::vector<float>& w, const std::vector<float>& bias,
                                         const std::vector<float>& residual) {
  const int64_t P = a.P(), Q = a.Q();
  std::vector<double> y(static_cast<size_t>(a.N * P * Q * a.K));
  for (int64_t n = 0; n < a.N; ++n)
    for (int64_t p = 0; p < P; ++p)
      for (int64_t q = 0; q < Q; ++q) {
        const int64_t m = (n * P + p) * Q + q;
        for (int64_t k = 0; k < a.K; ++k) {
          double s = 0;
          for (int r = 0; r < a.R; ++r) {
            const int64_t h = p * a.strideH + r - a.padH;
            if (h < 0 || h >= a.H) continue;
            for (int t = 0; t < a.S; ++t) {
              const int64_t ww = q * a.strideW + t - a.padW;
              if (ww < 0 || ww >= a.W) continue;
              const float* xp = &x[static_cast<size_t>(((n * a.H + h) * a.W + ww) * a.C)];
              const float* wp = &w[static_cast<size_t>(((k * a.R + r) * a.S + t) * a.C)];
              for (int64_t c = 0; c < a.C; ++c) s += double(xp[c]) * double(wp[c]);
            }
          }
          if (!bias.empty()) s += bias[static_cast<size_t>(k)];
          if (a.epilogue == cusync_conv::ConvEpilogue::BiasResidualRelu) s += residual[static_cast<size_t>(m * a.K + k)];
          if (a.epilogue != cusync_conv::ConvEpilogue::Bias) s = std::max(s, 0.0);
          y[static_cast<size_t>(m * a.K + k)] = s;
        }
      }
  return y;
}

}  // namespace conv_test
