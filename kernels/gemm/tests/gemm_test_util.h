// Helpers of the GEMM GPU tests: fp16/bf16 bit conversions, a naive fp32
// reference GEMM, and runCase(), which runs one configuration on fresh random
// data with a poisoned output and guard rows and checks it against the
// reference with the epilogue applied on the host in double.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "kernels/testing/activation_ref.h"

namespace gemm_test {

using namespace cusync_gemm;

#define CK(x) ASSERT_EQ((x), cudaSuccess) << #x

inline uint16_t toBits(float f, DType t) {
  if (t == DType::BF16) {
    __nv_bfloat16 b = __float2bfloat16_rn(f);
    uint16_t u;
    std::memcpy(&u, &b, 2);
    return u;
  }
  __half h = __float2half_rn(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
inline float fromBits(uint16_t u, DType t) {
  if (t == DType::BF16) {
    __nv_bfloat16 b;
    std::memcpy(&b, &u, 2);
    return __bfloat162float(b);
  }
  __half h;
  std::memcpy(&h, &u, 2);
  return __half2float(h);
}

template <class T>
__device__ float ld(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(p[i]);
  else return __half2float(p[i]);
}

template <class T>
__global__ void refGemm(const T* A, const T* B, float* D, int M, int N, int K, int kn) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  const int m = blockIdx.y;
  if (n >= N || m >= M) return;
  float s = 0.f;
  for (int k = 0; k < K; ++k) s += ld(A, (int64_t)m * K + k) * ld(B, kn ? (int64_t)k * N + n : (int64_t)n * K + k);
  D[(int64_t)m * N + n] = s;
}

struct Dev {
  void* p = nullptr;
  explicit Dev(size_t bytes) { cudaMalloc(&p, bytes); }
  ~Dev() { cudaFree(p); }
};

using cusync_testing::gelu;
using cusync_testing::silu;

struct Case {
  DType dt;
  BLayout bl;
  TileConfig cfg;
  Epilogue epi;
  int splitK = 0;
  int kCutGroups = 0;
};

inline std::mt19937& rng() {
  static std::mt19937 g(12345);
  return g;
}

inline void runCase(const Case& c, int M, int N, int K, bool withBias) {
  const int nOut = c.epi == Epilogue::SwiGLU ? N / 2 : N;
  std::uniform_real_distribution<float> U(-1.f, 1.f);
  std::vector<uint16_t> hA((size_t)M * K), hB((size_t)N * K), hBias(N), hRes((size_t)M * N);
  std::vector<float> fA(hA.size()), fB(hB.size()), fBias(N), fRes(hRes.size());
  auto fill = [&](std::vector<uint16_t>& h, std::vector<float>& f) {
    for (size_t i = 0; i < h.size(); ++i) {
      h[i] = toBits(U(rng()), c.dt);
      f[i] = fromBits(h[i], c.dt);
    }
  };
  fill(hA, fA);
  fill(hB, fB);
  fill(hBias, fBias);
  fill(hRes, fRes);
  const int guardRows = 3;
  Dev dA(hA.size() * 2), dB(hB.size() * 2), dBias(N * 2), dRes(hRes.size() * 2);
  Dev dC((size_t)(M + guardRows) * nOut * 2), dD((size_t)M * N * 4);
  ASSERT_EQ(cudaMemcpy(dA.p, hA.data(), hA.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dB.p, hB.data(), hB.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dBias.p, hBias.data(), N * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dRes.p, hRes.data(), hRes.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dC.p, 0xFF, (size_t)(M + guardRows) * nOut * 2), cudaSuccess);  // NaN poison

  GemmArgs a;
  a.M = M, a.N = N, a.K = K, a.dtype = c.dt, a.bLayout = c.bl, a.A = dA.p, a.B = dB.p, a.C = dC.p;
  a.epilogue = c.epi;
  a.bias = (withBias || c.epi == Epilogue::Bias) ? dBias.p : nullptr;
  a.residual = c.epi == Epilogue::Residual ? dRes.p : nullptr;
  a.config = c.cfg;
  a.splitK = c.splitK;
  a.kCutGroups = c.kCutGroups;
  ASSERT_NO_THROW(gemm(a, nullptr));
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  dim3 rg((N + 127) / 128, M);
  if (c.dt == DType::BF16)
    refGemm<<<rg, 128>>>((const __nv_bfloat16*)dA.p, (const __nv_bfloat16*)dB.p, (float*)dD.p, M, N, K, c.bl == BLayout::KN);
  else
    refGemm<<<rg, 128>>>((const __half*)dA.p, (const __half*)dB.p, (float*)dD.p, M, N, K, c.bl == BLayout::KN);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<float> D((size_t)M * N);
  std::vector<uint16_t> hC((size_t)(M + guardRows) * nOut);
  ASSERT_EQ(cudaMemcpy(D.data(), dD.p, D.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(hC.data(), dC.p, hC.size() * 2, cudaMemcpyDeviceToHost), cudaSuccess);

  const bool useBias = a.bias != nullptr;
  double num = 0, den = 0, maxRef = 0;
  std::vector<double> ref((size_t)M * nOut);
  for (int m = 0; m < M; ++m)
    for (int j = 0; j < nOut; ++j) {
      double v;
      if (c.epi == Epilogue::SwiGLU) {
        const int gc = static_cast<int>(swigluInterleavedRow(j, false));
        const int uc = static_cast<int>(swigluInterleavedRow(j, true));
        const double g = D[(size_t)m * N + gc] + (useBias ? fBias[gc] : 0);
        const double u = D[(size_t)m * N + uc] + (useBias ? fBias[uc] : 0);
        v = silu(g) * u;
      } else {
        v = D[(size_t)m * N + j] + (useBias && c.epi != Epilogue::Identity ? fBias[j] : 0);
        if (c.epi == Epilogue::Gelu) v = gelu(v);
        if (c.epi == Epilogue::Residual) v += fRes[(size_t)m * N + j];
      }
      ref[(size_t)m * nOut + j] = v;
      maxRef = std::max(maxRef, std::fabs(v));
    }
  int bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double o = fromBits(hC[i], c.dt);
    const double d = o - ref[i];
    if (!std::isfinite(o) || std::fabs(d) > 0.02 * maxRef + 0.02 * std::fabs(ref[i])) {
      if (bad++ < 5)
        ADD_FAILURE() << "element (" << i / nOut << "," << i % nOut << ") got " << o << " want " << ref[i];
    }
    num += d * d;
    den += ref[i] * ref[i];
  }
  for (size_t i = ref.size(); i < hC.size(); ++i)
    if (hC[i] != 0xFFFF) {
      ADD_FAILURE() << "guard row element " << i - ref.size() << " was overwritten";
      break;
    }
  const double rel = std::sqrt(num / std::max(den, 1e-30));
  EXPECT_EQ(bad, 0);
  EXPECT_LT(rel, c.dt == DType::BF16 ? 1e-2 : 2e-3) << "relative error";
}

inline std::string caseName(const Case& c) {
  return std::string(c.dt == DType::BF16 ? "bf16" : "fp16") + "_" + (c.bl == BLayout::NK ? "NK" : "KN") + "_" +
         [&] {
           std::string n = toString(c.cfg);
           n.erase(std::remove(n.begin(), n.end(), '-'), n.end());
           return n;
         }() + "_" +
         toString(c.epi);
}

}  // namespace gemm_test
