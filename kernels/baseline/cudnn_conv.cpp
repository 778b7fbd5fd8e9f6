// cuDNN conv2d forward baseline (cudnn_conv.h).
//
// Which cuDNN API: the convolution calls of cuDNN's descriptor API
// (cudnnFindConvolutionForwardAlgorithmEx, cudnnConvolutionForward,
// cudnnConvolutionBiasActivationForward). They take bf16 NHWC activations
// and NHWC (KRSC) filters with fp32 compute and tensor-op math on sm_80 and
// later, Find times every algorithm cuDNN has for the shape on the real
// buffers (what cudnn.benchmark does), and the fused call adds bias, an
// optional residual (its z input) and ReLU in the convolution's epilogue
// with no extra pass over y. The graph API would express the same fusion as
// an operation graph, with several times the descriptors, and its generic
// fusion engines compile their kernels at run time (NVRTC). PyTorch's
// graph-API timings of the same layers (tools/torch_baselines.py: cuDNN's
// convolution, then bias and ReLU kernels of its own) are the check that this
// choice leaves no speed behind.
//
// The fused call does not take every algorithm with every data type, so a
// plan tries it with each algorithm Find returned and also times the fastest
// plain convolution followed by our epilogue kernel (conv_epilogue.h), each
// timed on the GPU alone (CUDA graph replays); the fastest is the plan.
#include "kernels/baseline/cudnn_conv.h"

#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <exception>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cusync/error.h"
#include "cusync/memory.h"
#include "kernels/baseline/conv_epilogue.h"

namespace cusync_baseline {

namespace {

void check(cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return;
  std::string msg = std::string(what) + ": " + cudnnGetErrorString(s);
#if CUDNN_MAJOR >= 9
  char last[1024] = {};
  cudnnGetLastErrorString(last, sizeof last);
  if (last[0]) msg += " (" + std::string(last) + ")";
#endif
  throw cusync::Error(cusync::ErrorCode::CudaError, "cudnn", msg);
}

void cudaOk(cudaError_t e, const char* what) { cusync::cudaCheck(e, what, "cudnn"); }

const char* algoName(cudnnConvolutionFwdAlgo_t a) {
  switch (a) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "implicit_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "implicit_precomp_gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "gemm";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "direct";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "fft";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "fft_tiling";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "winograd";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "winograd_nonfused";
    default: return "algo?";
  }
}

int toInt(int64_t v, const char* what, const ConvShape& s) {
  if (v < 1 || v > INT_MAX)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "cudnn",
                        std::string(what) + " = " + std::to_string(v) + " is out of cuDNN's range (" + s.describe() + ")");
  return int(v);
}

// Median ms of `reps` runs of f on `stream`, after one warm-up run. Runs
// enqueued one after the other: where cuDNN's host time per call exceeds
// the GPU's, this times the host.
template <class F>
float medianMs(F&& f, cudaStream_t stream, int reps = 5) {
  f();
  std::vector<cudaEvent_t> ev(reps + 1);
  for (auto& e : ev) cudaOk(cudaEventCreate(&e), "cudaEventCreate");
  cudaOk(cudaEventRecord(ev[0], stream), "cudaEventRecord");
  for (int i = 0; i < reps; ++i) {
    f();
    cudaOk(cudaEventRecord(ev[i + 1], stream), "cudaEventRecord");
  }
  cudaOk(cudaEventSynchronize(ev[reps]), "cudaEventSynchronize");
  std::vector<float> t(reps);
  for (int i = 0; i < reps; ++i) cudaOk(cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]), "cudaEventElapsedTime");
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(t.begin(), t.end());
  return t[reps / 2];
}

// The GPU time of f: median ms of `reps` replays of f captured as a CUDA
// graph, after one run of f outside the capture (cuDNN's first call of a
// configuration may load kernels). A plan's candidates run 20-100 us on
// the GPU while cuDNN's descriptor API spends tens of microseconds a call
// on the host, so timed call after call (medianMs) they measured alike
// (85-96 us on the H100 for a fused plan that replays in 57 us) and the
// pick between them went either way from run to run. Where f cannot be
// captured (the legacy default stream, a call that refuses capture) it
// falls back to medianMs.
template <class F>
float medianGpuMs(F&& f, cudaStream_t stream, int reps = 7) {
  f();
  cudaOk(cudaStreamSynchronize(stream), "cudaStreamSynchronize before a trial's capture");
  cudaGraph_t g = nullptr;
  bool captured = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess;
  if (captured) {
    try {
      f();
    } catch (const std::exception&) {
      captured = false;
    }
    captured = cudaStreamEndCapture(stream, &g) == cudaSuccess && captured;
  }
  cudaGraphExec_t ge = nullptr;
  if (captured) captured = cudaGraphInstantiate(&ge, g, 0) == cudaSuccess;
  if (g) cudaGraphDestroy(g);
  if (!captured) {
    (void)cudaGetLastError();  // the refused capture's error, if any
    return medianMs(f, stream, reps);
  }
  const std::unique_ptr<CUgraphExec_st, cudaError_t (*)(cudaGraphExec_t)> exec(ge, cudaGraphExecDestroy);
  return medianMs([&] { cudaOk(cudaGraphLaunch(ge, stream), "cudaGraphLaunch (a cuDNN trial)"); }, stream, reps);
}

// Device memory freed on scope exit.
struct DeviceBytes {
  void* p = nullptr;
  size_t bytes = 0;
  DeviceBytes() = default;
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  ~DeviceBytes() { cudaFree(p); }
  void resize(size_t n, const char* what) {
    if (n <= bytes) return;
    cudaFree(p);
    p = nullptr, bytes = 0;
    cudaOk(cudaMalloc(&p, n), what);
    bytes = n;
  }
};

// The descriptors of one shape, and what runs it with one epilogue.
struct Plan {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t act = nullptr;
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  bool fused = false;  // cudnnConvolutionBiasActivationForward; else the convolution (+ our epilogue kernel)
  size_t ws = 0;
  int64_t pixels = 0, K = 0;  // y's rows and channels, for our epilogue kernel
  std::string what;

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (x) cudnnDestroyTensorDescriptor(x);
    if (y) cudnnDestroyTensorDescriptor(y);
    if (bias) cudnnDestroyTensorDescriptor(bias);
    if (w) cudnnDestroyFilterDescriptor(w);
    if (conv) cudnnDestroyConvolutionDescriptor(conv);
    if (act) cudnnDestroyActivationDescriptor(act);
  }
};

void describeInto(Plan& p, cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math, const char* how) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s%s%s, ws %.1f MB", algoName(algo),
                math == CUDNN_DEFAULT_MATH ? " (default math)" : "", how, double(p.ws) / (1 << 20));
  p.what = buf;
}

}  // namespace

bool ConvShape::operator<(const ConvShape& o) const {
  return std::tie(N, H, W, C, K, R, S, padH, padW, strideH, strideW) <
         std::tie(o.N, o.H, o.W, o.C, o.K, o.R, o.S, o.padH, o.padW, o.strideH, o.strideW);
}

std::string ConvShape::describe() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "N%lld %lldx%lldx%lld -> %lld, %dx%d s%d p%d", (long long)N, (long long)H,
                (long long)W, (long long)C, (long long)K, R, S, strideH, padH);
  return buf;
}

const char* toString(CudnnEpilogue e) {
  switch (e) {
    case CudnnEpilogue::None: return "none";
    case CudnnEpilogue::BiasRelu: return "bias+relu";
    case CudnnEpilogue::BiasResidualRelu: return "bias+residual+relu";
  }
  return "?";
}

struct CudnnConv::Impl {
  cudnnHandle_t handle = nullptr;
  size_t maxWs = 0;
  DeviceBytes ws;  // the workspace every plan runs with: the largest a plan needs
  std::map<ConvShape, std::vector<cudnnConvolutionFwdAlgoPerf_t>> found;  // Find's results per shape
  std::map<std::pair<ConvShape, int>, std::unique_ptr<Plan>> plans;

  const Plan* lookup(const ConvShape& s, CudnnEpilogue e) const {
    const auto it = plans.find({s, int(e)});
    return it == plans.end() ? nullptr : it->second.get();
  }

  void makeDescriptors(Plan& p, const ConvShape& s) const {
    const int n = toInt(s.N, "N", s), c = toInt(s.C, "C", s), h = toInt(s.H, "H", s), w = toInt(s.W, "W", s);
    const int k = toInt(s.K, "K", s), pp = toInt(s.P(), "P", s), q = toInt(s.Q(), "Q", s);
    check(cudnnCreateTensorDescriptor(&p.x), "cudnnCreateTensorDescriptor");
    check(cudnnSetTensor4dDescriptor(p.x, CUDNN_TENSOR_NHWC, CUDNN_DATA_BFLOAT16, n, c, h, w), "x descriptor");
    check(cudnnCreateFilterDescriptor(&p.w), "cudnnCreateFilterDescriptor");
    check(cudnnSetFilter4dDescriptor(p.w, CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_NHWC, k, c, s.R, s.S), "w descriptor");
    check(cudnnCreateConvolutionDescriptor(&p.conv), "cudnnCreateConvolutionDescriptor");
    check(cudnnSetConvolution2dDescriptor(p.conv, s.padH, s.padW, s.strideH, s.strideW, 1, 1, CUDNN_CROSS_CORRELATION,
                                          CUDNN_DATA_FLOAT),
          "convolution descriptor");
    check(cudnnSetConvolutionMathType(p.conv, CUDNN_TENSOR_OP_MATH), "cudnnSetConvolutionMathType");
    int on = 0, ok = 0, oh = 0, ow = 0;
    check(cudnnGetConvolution2dForwardOutputDim(p.conv, p.x, p.w, &on, &ok, &oh, &ow),
          "cudnnGetConvolution2dForwardOutputDim");
    if (on != n || ok != k || oh != pp || ow != q)
      throw cusync::Error(cusync::ErrorCode::InvalidArgument, "cudnn",
                          "cuDNN's output " + std::to_string(on) + "x" + std::to_string(oh) + "x" + std::to_string(ow) +
                              "x" + std::to_string(ok) + " differs from ours for " + s.describe());
    check(cudnnCreateTensorDescriptor(&p.y), "cudnnCreateTensorDescriptor");
    check(cudnnSetTensor4dDescriptor(p.y, CUDNN_TENSOR_NHWC, CUDNN_DATA_BFLOAT16, n, k, pp, q), "y descriptor");
    check(cudnnCreateTensorDescriptor(&p.bias), "cudnnCreateTensorDescriptor");
    check(cudnnSetTensor4dDescriptor(p.bias, CUDNN_TENSOR_NHWC, CUDNN_DATA_BFLOAT16, 1, k, 1, 1), "bias descriptor");
    check(cudnnCreateActivationDescriptor(&p.act), "cudnnCreateActivationDescriptor");
    check(cudnnSetActivationDescriptor(p.act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
          "activation descriptor");
  }

  // Every algorithm's time for the shape, fastest first, the failed ones left out.
  const std::vector<cudnnConvolutionFwdAlgoPerf_t>& find(const ConvShape& s, Plan& p, const CudnnConvBuffers& b,
                                                         DeviceBytes& scratch) {
    auto it = found.find(s);
    if (it != found.end()) return it->second;
    int most = 0;
    check(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &most), "cudnnGetConvolutionForwardAlgorithmMaxCount");
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::max(most, 1));
    int got = 0;
    check(cudnnFindConvolutionForwardAlgorithmEx(handle, p.x, b.x, p.w, b.w, p.conv, p.y, b.y, int(perf.size()), &got,
                                                 perf.data(), scratch.p, scratch.bytes),
          "cudnnFindConvolutionForwardAlgorithmEx");
    std::vector<cudnnConvolutionFwdAlgoPerf_t> ok;
    std::string why;
    for (int i = 0; i < got; ++i) {
      if (perf[i].status == CUDNN_STATUS_SUCCESS) ok.push_back(perf[i]);
      else why += std::string(why.empty() ? "" : ", ") + algoName(perf[i].algo) + ": " + cudnnGetErrorString(perf[i].status);
    }
    if (ok.empty())
      throw cusync::Error(cusync::ErrorCode::CudaError, "cudnn",
                          "no forward algorithm runs " + s.describe() + " (bf16 NHWC)" + (why.empty() ? "" : ": " + why));
    // Default-math variants are left out where a tensor-op one runs: on the
    // H100 Find and the plan's trials timed some of them among the fastest,
    // and then they ran at 10-14x the tensor-op time in the benchmark
    // (implicit_gemm with bias + ReLU fused at ResNet 28 x 28, batch 16:
    // 240 us against 17 us for implicit_precomp_gemm alone).
    const bool tensorOps = std::any_of(ok.begin(), ok.end(), [](const auto& a) { return a.mathType != CUDNN_DEFAULT_MATH; });
    if (tensorOps)
      ok.erase(std::remove_if(ok.begin(), ok.end(), [](const auto& a) { return a.mathType == CUDNN_DEFAULT_MATH; }),
               ok.end());
    std::stable_sort(ok.begin(), ok.end(), [](const auto& a, const auto& c) { return a.time < c.time; });
    return found.emplace(s, std::move(ok)).first->second;
  }

  // One run on `stream` (the handle's stream).
  void launch(const Plan& p, CudnnEpilogue e, const CudnnConvBuffers& b, cudaStream_t stream, void* wsPtr,
              size_t wsBytes) const {
    const float one = 1.f, zero = 0.f;
    if (e == CudnnEpilogue::None || !p.fused) {
      check(cudnnConvolutionForward(handle, &one, p.x, b.x, p.w, b.w, p.conv, p.algo, wsPtr, wsBytes, &zero, p.y, b.y),
            "cudnnConvolutionForward");
      if (e != CudnnEpilogue::None)
        biasResidualRelu(b.y, b.bias, e == CudnnEpilogue::BiasResidualRelu ? b.residual : nullptr, p.pixels, p.K,
                         stream);
      return;
    }
    // z is the residual (alpha2 = 1), or y itself with alpha2 = 0.
    const bool res = e == CudnnEpilogue::BiasResidualRelu;
    check(cudnnConvolutionBiasActivationForward(handle, &one, p.x, b.x, p.w, b.w, p.conv, p.algo, wsPtr, wsBytes,
                                                res ? &one : &zero, p.y, res ? b.residual : b.y, p.bias, b.bias, p.act,
                                                p.y, b.y),
          "cudnnConvolutionBiasActivationForward");
  }
};

CudnnConv::CudnnConv(size_t maxWorkspaceBytes) : impl_(new Impl) {
  impl_->maxWs = maxWorkspaceBytes;
  check(cudnnCreate(&impl_->handle), "cudnnCreate");
}

CudnnConv::~CudnnConv() {
  if (impl_->handle) cudnnDestroy(impl_->handle);
}

namespace {

void checkBuffers(const ConvShape& s, CudnnEpilogue e, const CudnnConvBuffers& b) {
  std::string missing;
  if (!b.x) missing = "x";
  else if (!b.w) missing = "w";
  else if (!b.y) missing = "y";
  else if (e != CudnnEpilogue::None && !b.bias) missing = "bias";
  else if (e == CudnnEpilogue::BiasResidualRelu && !b.residual) missing = "residual";
  if (!missing.empty())
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "cudnn",
                        "no " + missing + " buffer for " + s.describe() + " with epilogue " + toString(e));
}

}  // namespace

void CudnnConv::plan(const ConvShape& s, CudnnEpilogue e, const CudnnConvBuffers& b, cudaStream_t stream) {
  Impl& m = *impl_;
  if (m.lookup(s, e)) return;
  checkBuffers(s, e, b);
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  cudaOk(cudaStreamIsCapturing(stream, &capturing), "cudaStreamIsCapturing");
  if (capturing != cudaStreamCaptureStatusNone)
    throw cusync::Error(cusync::ErrorCode::InvalidArgument, "cudnn",
                        "no plan for " + s.describe() + " with epilogue " + toString(e) +
                            " during a CUDA graph capture: plan() it before the capture");
  auto p = std::make_unique<Plan>();
  p->pixels = s.N * s.P() * s.Q(), p->K = s.K;
  m.makeDescriptors(*p, s);
  check(cudnnSetStream(m.handle, stream), "cudnnSetStream");

  // Scratch workspace for the trials: the bound, or half the free memory.
  size_t freeBytes = 0, totalBytes = 0;
  cudaOk(cudaMemGetInfo(&freeBytes, &totalBytes), "cudaMemGetInfo");
  DeviceBytes scratch;
  scratch.resize(std::max<size_t>(std::min(m.maxWs, freeBytes / 2), 256), "cudaMalloc(cuDNN trial workspace)");
  const std::vector<cudnnConvolutionFwdAlgoPerf_t>& perf = m.find(s, *p, b, scratch);

  // The convolution alone: Find's fastest.
  auto useAlgo = [&](const cudnnConvolutionFwdAlgoPerf_t& a) {
    p->algo = a.algo;
    check(cudnnSetConvolutionMathType(p->conv, a.mathType), "cudnnSetConvolutionMathType");
    check(cudnnGetConvolutionForwardWorkspaceSize(m.handle, p->x, p->w, p->conv, p->y, a.algo, &p->ws),
          "cudnnGetConvolutionForwardWorkspaceSize");
    p->ws = std::max(p->ws, a.memory);
  };
  useAlgo(perf.front());
  p->fused = false;
  if (e == CudnnEpilogue::None) {
    describeInto(*p, p->algo, perf.front().mathType, "");
  } else {
    // The fastest convolution followed by our epilogue kernel ...
    const bool res = e == CudnnEpilogue::BiasResidualRelu;
    float bestMs = medianGpuMs([&] { m.launch(*p, e, b, stream, scratch.p, scratch.bytes); }, stream);
    cudnnConvolutionFwdAlgoPerf_t best = perf.front();
    bool bestFused = false;
    // ... against cuDNN's fused call with each algorithm that takes it.
    for (const auto& a : perf) {
      if (a.memory > scratch.bytes) continue;
      useAlgo(a);
      p->fused = true;
      const float one = 1.f, zero = 0.f;
      const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
          m.handle, &one, p->x, b.x, p->w, b.w, p->conv, a.algo, scratch.p, scratch.bytes, res ? &one : &zero, p->y,
          res ? b.residual : b.y, p->bias, b.bias, p->act, p->y, b.y);
      if (st != CUDNN_STATUS_SUCCESS) continue;  // this algorithm does not fuse this configuration
      const float ms = medianGpuMs([&] { m.launch(*p, e, b, stream, scratch.p, scratch.bytes); }, stream);
      if (ms < bestMs) bestMs = ms, best = a, bestFused = true;
    }
    cudaOk(cudaStreamSynchronize(stream), "cudaStreamSynchronize after the cuDNN trials");
    cudaOk(cudaGetLastError(), "the cuDNN trials");
    useAlgo(best);
    p->fused = bestFused;
    describeInto(*p, p->algo, best.mathType,
                 bestFused ? (res ? " + bias + residual + relu fused" : " + bias + relu fused") : " + epilogue kernel");
  }
  if (p->ws > m.ws.bytes) {
    cudaOk(cudaStreamSynchronize(stream), "cudaStreamSynchronize before the workspace grows");
    m.ws.resize(p->ws, "cudaMalloc(cuDNN workspace)");
  }
  m.plans.emplace(std::make_pair(s, int(e)), std::move(p));
}

void CudnnConv::run(const ConvShape& s, CudnnEpilogue e, const CudnnConvBuffers& b, cudaStream_t stream) {
  Impl& m = *impl_;
  const Plan* p = m.lookup(s, e);
  if (!p) {
    plan(s, e, b, stream);
    p = m.lookup(s, e);
  }
  checkBuffers(s, e, b);
  check(cudnnSetStream(m.handle, stream), "cudnnSetStream");
  m.launch(*p, e, b, stream, m.ws.p, m.ws.bytes);
}

std::string CudnnConv::describe(const ConvShape& s, CudnnEpilogue e) const {
  const Plan* p = impl_->lookup(s, e);
  return p ? p->what : std::string();
}

}  // namespace cusync_baseline
