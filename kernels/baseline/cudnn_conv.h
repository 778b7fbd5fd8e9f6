// The vendor baseline of the convolution benchmarks: a bf16 conv2d forward
// through cuDNN, with the fastest way cuDNN has for each layer shape, as
// PyTorch's cudnn.benchmark picks it. Layouts as kernels/conv/conv.h:
//
//   x  [N, H, W, C]   NHWC activations, bf16
//   w  [K, R, S, C]   KRSC filters (cuDNN's NHWC filter format), bf16
//   y  [N, P, Q, K]   NHWC output, bf16; fp32 accumulation
//
// Epilogues, in fp32 before rounding:
//   None              y = conv(x, w)
//   BiasRelu          y = max(conv(x, w) + bias, 0)
//   BiasResidualRelu  y = max(conv(x, w) + bias + residual, 0), residual [N, P, Q, K]
//
// Built only where CMake found cuDNN (CUSYNC_CUDNN_ROOT, cmake/CusyncCudnn.cmake).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace cusync_baseline {

// One convolution's geometry (the fields of cusync_conv::Conv2dArgs).
struct ConvShape {
  int64_t N = 0, H = 0, W = 0, C = 0;  // input images, height, width, channels
  int64_t K = 0;                       // output channels
  int R = 3, S = 3;                    // filter height and width
  int padH = 1, padW = 1;
  int strideH = 1, strideW = 1;

  int64_t P() const { return (H + 2 * padH - R) / strideH + 1; }
  int64_t Q() const { return (W + 2 * padW - S) / strideW + 1; }
  bool operator<(const ConvShape& o) const;
  std::string describe() const;  // "N8 56x56x64 -> 64, 3x3 s1 p1"
};

enum class CudnnEpilogue { None, BiasRelu, BiasResidualRelu };
const char* toString(CudnnEpilogue e);

struct CudnnConvBuffers {
  const void* x = nullptr;
  const void* w = nullptr;
  void* y = nullptr;
  const void* bias = nullptr;      // [K]: BiasRelu, BiasResidualRelu
  const void* residual = nullptr;  // [N, P, Q, K]: BiasResidualRelu
};

// A cuDNN handle, its workspace and a plan per (shape, epilogue). Errors of
// cuDNN and CUDA are thrown as cusync::Error(CudaError) with cuDNN's message.
// Needs a CUDA GPU: the constructor throws without one.
class CudnnConv {
 public:
  // maxWorkspaceBytes bounds the workspace an algorithm may use.
  explicit CudnnConv(size_t maxWorkspaceBytes = size_t(256) << 20);
  ~CudnnConv();
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // Finds the fastest way to run (shape, epilogue): every cuDNN algorithm
  // timed on these buffers, and where the epilogue has one, cuDNN's fused
  // bias + activation call with each algorithm against the fastest
  // convolution followed by an epilogue kernel. Runs on `stream` and waits
  // for it; overwrites b.y. Once per (shape, epilogue); later calls return at
  // once. Not while `stream` is being captured into a CUDA graph. The
  // workspace may grow, which invalidates CUDA graphs captured before.
  void plan(const ConvShape& s, CudnnEpilogue e, const CudnnConvBuffers& b, cudaStream_t stream);

  // y = epilogue(conv(x, w)), asynchronous on `stream`; plans first where
  // (shape, epilogue) has no plan yet (which throws during a capture).
  void run(const ConvShape& s, CudnnEpilogue e, const CudnnConvBuffers& b, cudaStream_t stream);

  // What the plan runs, e.g. "implicit_precomp_gemm+bias+relu fused, ws 0 MB"
  // or "implicit_gemm + epilogue kernel, ws 2 MB"; empty without a plan.
  std::string describe(const ConvShape& s, CudnnEpilogue e) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cusync_baseline
