// GPU correctness of every MLP variant (kernels/mlp/mlp.h) at ragged M and at
// the model shapes: fresh random data, poisoned H and Y before every run,
// against an fp32 GPU reference (activation applied in fp32, H rounded to
// bf16 like the pipelines do), over repeated runs (epochs: the semaphores
// are never reset) and CUDA graph replays.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "cusync/error.h"
#include "kernels/gemm/gemm.h"
#include "kernels/mlp/mlp.h"
#include "kernels/testing/require_hopper.h"

using namespace cusync_mlp;

namespace {


#define CK(x)                                                              \
  do {                                                                     \
    const cudaError_t e_ = (x);                                            \
    ASSERT_EQ(e_, cudaSuccess) << #x << ": " << cudaGetErrorString(e_);    \
  } while (0)

__device__ __host__ inline uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

__global__ void fillRandom(__nv_bfloat16* p, size_t n, uint64_t seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const float u = (hash32(seed * 0x9E3779B97F4A7C15ull + i) >> 8) * (1.f / 16777216.f);
    p[i] = __float2bfloat16_rn((2.f * u - 1.f) * scale);
  }
}

// C[m][n] = sum_k A[m][k] B[n][k], fp32 accumulation; 16x16 tiles.
__global__ void refGemm(const __nv_bfloat16* A, const __nv_bfloat16* B, float* C, int M, int N, int K) {
  __shared__ float as[16][17], bs[16][17];
  const int m = blockIdx.y * 16 + threadIdx.y, n = blockIdx.x * 16 + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += 16) {
    const int ka = k0 + threadIdx.x;
    as[threadIdx.y][threadIdx.x] = (m < M && ka < K) ? __bfloat162float(A[size_t(m) * K + ka]) : 0.f;
    const int nb = blockIdx.x * 16 + threadIdx.y;
    bs[threadIdx.y][threadIdx.x] = (nb < N && ka < K) ? __bfloat162float(B[size_t(nb) * K + ka]) : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < 16; ++k) acc += as[threadIdx.y][k] * bs[threadIdx.x][k];
    __syncthreads();
  }
  if (m < M && n < N) C[size_t(m) * N + n] = acc;
}

__global__ void activate(const float* G, __nv_bfloat16* H, int M, int N1, bool swiglu) {
  const int K2 = swiglu ? N1 / 2 : N1;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < size_t(M) * K2; i += size_t(gridDim.x) * blockDim.x) {
    const size_t m = i / K2, j = i % K2;
    float h;
    if (swiglu) {
      const size_t q = j / 8, r = j % 8;
      const float g = G[m * N1 + 16 * q + r], u = G[m * N1 + 16 * q + 8 + r];
      h = g / (1.f + expf(-g)) * u;
    } else {
      const float x = G[m * N1 + j];
      h = 0.5f * x * (1.f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
    H[i] = __float2bfloat16_rn(h);
  }
}

struct RelErr {
  double err = 0;
  size_t nonFinite = 0;
};

RelErr compare(const void* dOut, const std::vector<float>& ref) {
  std::vector<__nv_bfloat16> h(ref.size());
  cudaMemcpy(h.data(), dOut, h.size() * 2, cudaMemcpyDeviceToHost);
  double num = 0, den = 0;
  RelErr r;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double v = __bfloat162float(h[i]);
    if (!std::isfinite(v)) {
      ++r.nonFinite;
      continue;
    }
    num += (v - ref[i]) * (v - ref[i]);
    den += double(ref[i]) * ref[i];
  }
  r.err = std::sqrt(num / (den > 0 ? den : 1));
  return r;
}

struct Case {
  Variant v;
  Order o;
};

const Case kCases[] = {{Variant::NoSync, Order::Auto},   {Variant::Pdl, Order::Auto},
                       {Variant::RowSync, Order::Auto},  {Variant::RowSync, Order::RowMajor},
                       {Variant::TileSync, Order::Auto}, {Variant::TileSync, Order::RowMajor},
                       {Variant::Fused, Order::Auto},    {Variant::Cublas, Order::Auto}};

void runModel(Model model) {
  REQUIRE_HOPPER();
  const Dims d = dims(model);
  const bool swiglu = model == Model::LLaMA;
  // 256 and 1000 run the fused kernel with a tile width per stage (GPT-3 96 / 192 and 192 / 256, LLaMA 96 / 128 and 176 / 256).
  const int64_t Ms[] = {1, 7, 100, 256, 1000, 2048};
  const int64_t maxM = 2048;
  __nv_bfloat16 *X, *W1, *W2, *H, *Y, *Href;
  float *G, *Yf;
  CK(cudaMalloc(&X, maxM * d.K1 * 2));
  CK(cudaMalloc(&W1, d.N1 * d.K1 * 2));
  CK(cudaMalloc(&W2, d.N2 * d.K2 * 2));
  CK(cudaMalloc(&H, maxM * d.K2 * 2));
  CK(cudaMalloc(&Y, maxM * d.N2 * 2));
  CK(cudaMalloc(&Href, maxM * d.K2 * 2));
  CK(cudaMalloc(&G, maxM * d.N1 * 4));
  CK(cudaMalloc(&Yf, maxM * d.N2 * 4));
  fillRandom<<<1024, 256>>>(W1, d.N1 * d.K1, 11 + int(model), 1.7f / std::sqrt(float(d.K1)));
  fillRandom<<<1024, 256>>>(W2, d.N2 * d.K2, 12 + int(model), 1.7f / std::sqrt(float(d.K2)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  Mlp mlp(model, maxM);
  Buffers b{X, W1, H, W2, Y};
  uint64_t seed = 100;
  for (int64_t M : Ms) {
    fillRandom<<<1024, 256>>>(X, M * d.K1, seed++, 1.f);
    refGemm<<<dim3((d.N1 + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(X, W1, G, int(M), int(d.N1), int(d.K1));
    activate<<<1024, 256>>>(G, Href, int(M), int(d.N1), swiglu);
    refGemm<<<dim3((d.N2 + 15) / 16, (M + 15) / 16), dim3(16, 16)>>>(Href, W2, Yf, int(M), int(d.N2), int(d.K2));
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> yref(M * d.N2), href(M * d.K2);
    CK(cudaMemcpy(yref.data(), Yf, yref.size() * 4, cudaMemcpyDeviceToHost));
    {
      std::vector<__nv_bfloat16> t(href.size());
      CK(cudaMemcpy(t.data(), Href, t.size() * 2, cudaMemcpyDeviceToHost));
      for (size_t i = 0; i < t.size(); ++i) href[i] = __bfloat162float(t[i]);
    }
    for (const Case& c : kCases) {
      SCOPED_TRACE(std::string(toString(model)) + " M=" + std::to_string(M) + " " + toString(c.v) + "/" +
                   toString(c.o));
      auto check = [&](const char* what, int epoch) {
        CK(cudaStreamSynchronize(s));
        CK(cudaGetLastError());
        const RelErr eh = compare(H, href), ey = compare(Y, yref);
        EXPECT_EQ(eh.nonFinite, 0u) << what << " epoch " << epoch << ": unwritten or NaN H";
        EXPECT_EQ(ey.nonFinite, 0u) << what << " epoch " << epoch << ": unwritten or NaN Y";
        EXPECT_LT(eh.err, 1e-2) << what << " epoch " << epoch << " H";
        EXPECT_LT(ey.err, 1e-2) << what << " epoch " << epoch << " Y";
      };
      // Eager epochs.
      for (int e = 0; e < 3; ++e) {
        CK(cudaMemsetAsync(H, 0xFF, M * d.K2 * 2, s));
        CK(cudaMemsetAsync(Y, 0xFF, M * d.N2 * 2, s));
        mlp.run(M, b, c.v, s, c.o);
        check("eager", e);
        if (::testing::Test::HasFailure()) break;
      }
      // Graph replays (the pipeline captured once, replayed; the stages'
      // run counters keep advancing across eager runs and replays).
      mlp.prepare(M, c.v, c.o);
      cudaGraph_t g;
      cudaGraphExec_t ge;
      CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
      mlp.run(M, b, c.v, s, c.o);
      CK(cudaStreamEndCapture(s, &g));
      CK(cudaGraphInstantiate(&ge, g, 0));
      for (int e = 0; e < 3; ++e) {
        CK(cudaMemsetAsync(H, 0xFF, M * d.K2 * 2, s));
        CK(cudaMemsetAsync(Y, 0xFF, M * d.N2 * 2, s));
        CK(cudaGraphLaunch(ge, s));
        check("graph", e);
        if (::testing::Test::HasFailure()) break;
      }
      cudaGraphExecDestroy(ge);
      cudaGraphDestroy(g);
      // One more eager run after the replays.
      CK(cudaMemsetAsync(Y, 0xFF, M * d.N2 * 2, s));
      mlp.run(M, b, c.v, s, c.o);
      check("eager after graph", 0);
      if (::testing::Test::HasFailure()) break;
    }
    if (::testing::Test::HasFailure()) break;
  }
  cudaStreamDestroy(s);
  for (void* p : {(void*)X, (void*)W1, (void*)W2, (void*)H, (void*)Y, (void*)Href, (void*)G, (void*)Yf}) cudaFree(p);
}

TEST(MlpGpu, Gpt3EveryVariant) { runModel(Model::GPT3); }
TEST(MlpGpu, LlamaEveryVariant) { runModel(Model::LLaMA); }

TEST(MlpGpu, RejectsBadArguments) {
  REQUIRE_HOPPER();
  Mlp mlp(Model::GPT3, 64);
  Buffers b{};
  EXPECT_THROW(mlp.run(1, b, Variant::TileSync, nullptr), cusync::Error);
  EXPECT_THROW(mlp.prepare(65, Variant::TileSync), cusync::Error);
  EXPECT_THROW(mlp.prepare(0, Variant::RowSync), cusync::Error);
}

}  // namespace
