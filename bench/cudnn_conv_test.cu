// GPU tests of the cuDNN convolution baseline (kernels/baseline/cudnn_conv.h)
// against the bench's naive fp32 convolution (conv_reference.cuh): every
// epilogue, stride 2, 8 channels (VGG's padded input), a CUDA graph replay,
// and the errors. Skipped where there is no CUDA GPU.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "bench_ceilings.h"
#include "conv_reference.cuh"
#include "cusync/error.h"
#include "kernels/baseline/cudnn_conv.h"

using cusync_baseline::ConvShape;
using cusync_baseline::CudnnConv;
using cusync_baseline::CudnnConvBuffers;
using cusync_baseline::CudnnEpilogue;

namespace {

bool gpuHere() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return false;
  }
  return true;
}

#define REQUIRE_GPU() \
  if (!gpuHere()) GTEST_SKIP() << "no CUDA GPU present"

ConvShape shape(int64_t N, int64_t H, int64_t C, int64_t K, int stride = 1) {
  ConvShape s;
  s.N = N, s.H = s.W = H, s.C = C, s.K = K, s.strideH = s.strideW = stride;
  return s;
}

std::vector<float> download(const void* p, size_t n) {
  std::vector<__nv_bfloat16> h(n);
  EXPECT_EQ(cudaMemcpy(h.data(), p, n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = __bfloat162float(h[i]);
  return f;
}

// The operands of one convolution, random, and its reference output.
struct Conv {
  ConvShape s;
  CudnnEpilogue e;
  void *x = nullptr, *w = nullptr, *bias = nullptr, *res = nullptr, *y = nullptr;
  size_t nx, nw, ny;
  cudaStream_t stream = nullptr;

  Conv(const ConvShape& shape, CudnnEpilogue epilogue) : s(shape), e(epilogue) {
    nx = size_t(s.N * s.H * s.W * s.C), nw = size_t(s.K * s.R * s.S * s.C), ny = size_t(s.N * s.P() * s.Q() * s.K);
    EXPECT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    using Buffer = std::pair<void**, size_t>;  // where, bf16 elements
    for (const Buffer& b : {Buffer{&x, nx}, Buffer{&w, nw}, Buffer{&bias, size_t(s.K)}, Buffer{&res, ny}, Buffer{&y, ny}})
      EXPECT_EQ(cudaMalloc(b.first, b.second * 2), cudaSuccess);
    bench::fillRandomBf16(x, nx, 11, 1.f, stream);
    bench::fillRandomBf16(w, nw, 12, 1.7f / std::sqrt(float(s.C * s.R * s.S)), stream);
    bench::fillRandomBf16(bias, size_t(s.K), 13, 0.5f, stream);
    bench::fillRandomBf16(res, ny, 14, 1.f, stream);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  }
  ~Conv() {
    for (void* p : {x, w, bias, res, y}) cudaFree(p);
    cudaStreamDestroy(stream);
  }

  CudnnConvBuffers buffers() const {
    CudnnConvBuffers b;
    b.x = x, b.w = w, b.y = y;
    if (e != CudnnEpilogue::None) b.bias = bias;
    if (e == CudnnEpilogue::BiasResidualRelu) b.residual = res;
    return b;
  }

  // act(conv(x, w) + bias + residual) in fp32, image by image.
  std::vector<float> reference() const {
    bench::ConvGeom g{1, s.H, s.W, s.C, s.K, s.R, s.S, s.padH, s.padW, s.strideH, s.strideW};
    const size_t img = ny / size_t(s.N);
    float* d = nullptr;
    EXPECT_EQ(cudaMalloc(&d, ny * sizeof(float)), cudaSuccess);
    for (int64_t n = 0; n < s.N; ++n)
      EXPECT_EQ(bench::referenceConv(static_cast<const __nv_bfloat16*>(x) + n * (nx / s.N), w,
                                     e == CudnnEpilogue::None ? nullptr : bias, g, e == CudnnEpilogue::BiasRelu,
                                     d + n * img, nullptr, stream),
                cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    std::vector<float> ref(ny);
    EXPECT_EQ(cudaMemcpy(ref.data(), d, ny * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(d);
    if (e == CudnnEpilogue::BiasResidualRelu) {
      const std::vector<float> r = download(res, ny);
      for (size_t i = 0; i < ny; ++i) ref[i] = std::max(ref[i] + r[i], 0.f);
    }
    return ref;
  }

  void poison() { EXPECT_EQ(cudaMemsetAsync(y, 0xFF, ny * 2, stream), cudaSuccess); }

  // ||y - reference|| / ||reference||; infinity where y has a non-finite value.
  double error() const {
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const std::vector<float> out = download(y, ny), ref = reference();
    double num = 0, den = 0;
    for (size_t i = 0; i < ny; ++i) {
      if (!std::isfinite(out[i])) return INFINITY;
      num += double(out[i] - ref[i]) * (out[i] - ref[i]);
      den += double(ref[i]) * ref[i];
    }
    return std::sqrt(num / std::max(den, 1e-30));
  }
};

void expectMatches(const ConvShape& s, CudnnEpilogue e) {
  CudnnConv cudnn;
  Conv c(s, e);
  c.poison();
  cudnn.run(s, e, c.buffers(), c.stream);
  EXPECT_LT(c.error(), 1e-2) << s.describe() << ", " << toString(e) << ": " << cudnn.describe(s, e);
  EXPECT_FALSE(cudnn.describe(s, e).empty());
  // Planned: a second run takes the same plan.
  c.poison();
  cudnn.run(s, e, c.buffers(), c.stream);
  EXPECT_LT(c.error(), 1e-2);
}

TEST(CudnnConv, BiasReluStride1) {
  REQUIRE_GPU();
  expectMatches(shape(2, 10, 16, 32), CudnnEpilogue::BiasRelu);
}

TEST(CudnnConv, BiasReluStride2EightChannels) {
  REQUIRE_GPU();
  expectMatches(shape(3, 15, 8, 16, 2), CudnnEpilogue::BiasRelu);
}

TEST(CudnnConv, ConvolutionAlone) {
  REQUIRE_GPU();
  expectMatches(shape(2, 9, 64, 64), CudnnEpilogue::None);
}

TEST(CudnnConv, BiasResidualRelu) {
  REQUIRE_GPU();
  expectMatches(shape(2, 7, 32, 48), CudnnEpilogue::BiasResidualRelu);
}

TEST(CudnnConv, GraphReplayRunsThePlan) {
  REQUIRE_GPU();
  const ConvShape s = shape(4, 14, 64, 64);
  CudnnConv cudnn;
  Conv c(s, CudnnEpilogue::BiasRelu);
  cudnn.plan(s, c.e, c.buffers(), c.stream);
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  cudnn.run(s, c.e, c.buffers(), c.stream);
  ASSERT_EQ(cudaStreamEndCapture(c.stream, &g), cudaSuccess);
  cudaGraphExec_t x = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  c.poison();
  ASSERT_EQ(cudaGraphLaunch(x, c.stream), cudaSuccess);
  EXPECT_LT(c.error(), 1e-2);
  cudaGraphExecDestroy(x);
  cudaGraphDestroy(g);
}

TEST(CudnnConv, PlanningDuringACaptureIsAnError) {
  REQUIRE_GPU();
  const ConvShape s = shape(1, 8, 16, 16);
  CudnnConv cudnn;
  Conv c(s, CudnnEpilogue::BiasRelu);
  ASSERT_EQ(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_THROW(cudnn.run(s, c.e, c.buffers(), c.stream), cusync::Error);
  cudaGraph_t g = nullptr;
  cudaStreamEndCapture(c.stream, &g);
  if (g) cudaGraphDestroy(g);
  cudaGetLastError();
}

TEST(CudnnConv, MissingBiasIsAnError) {
  REQUIRE_GPU();
  const ConvShape s = shape(1, 8, 16, 16);
  CudnnConv cudnn;
  Conv c(s, CudnnEpilogue::None);  // buffers() leaves the bias out
  try {
    cudnn.run(s, CudnnEpilogue::BiasRelu, c.buffers(), c.stream);
    FAIL() << "no error";
  } catch (const cusync::Error& e) {
    EXPECT_EQ(e.code(), cusync::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("no bias buffer"), std::string::npos) << e.what();
  }
}

}  // namespace
