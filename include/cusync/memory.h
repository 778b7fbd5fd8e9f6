// Where a stage keeps its semaphores, tickets and order table: device memory
// for the GPU, host memory for the CPU emulator. Same Stage code for both.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <cuda_runtime_api.h>

#include "cusync/error.h"

namespace cusync {

inline void cudaCheck(cudaError_t e, const char* what, const std::string& stage = "") {
  if (e != cudaSuccess) throw Error(ErrorCode::CudaError, stage, std::string(what) + ": " + cudaGetErrorString(e));
}

// Device memory is set up on first use, which may come inside a CUDA graph
// capture (a stage made by the first gemm() or conv2d() call of a captured
// region): the allocation runs with the thread's capture mode relaxed, and
// copies and zeroing go through a private non-blocking stream, so that they
// neither join the graph nor synchronize with a capturing stream.
struct DeviceMemory {
  static void* allocZeroed(size_t bytes) {
    void* p = nullptr;
    {
      const RelaxedCapture relaxed;
      cudaCheck(cudaMalloc(&p, bytes), "cudaMalloc");
    }
    try {
      zero(p, bytes);
    } catch (...) {
      cudaFree(p);
      throw;
    }
    return p;
  }
  static void release(void* p) {
    if (p) cudaFree(p);
  }
  static void upload(void* dst, const void* src, size_t bytes) {
    const RelaxedCapture relaxed;
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream()), "cudaMemcpy to device");
    cudaCheck(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  }
  static void download(void* dst, const void* src, size_t bytes) {
    const RelaxedCapture relaxed;
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream()), "cudaMemcpy to host");
    cudaCheck(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  }
  static void zero(void* p, size_t bytes) {
    const RelaxedCapture relaxed;
    cudaCheck(cudaMemsetAsync(p, 0, bytes, stream()), "cudaMemset");
    cudaCheck(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  }

 private:
  struct RelaxedCapture {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode); }
    ~RelaxedCapture() { cudaThreadExchangeStreamCaptureMode(&mode); }
  };
  // One per device: a stream belongs to the device current when it was made.
  static cudaStream_t stream() {
    constexpr int kMaxDevices = 64;
    static cudaStream_t streams[kMaxDevices] = {};
    int dev = 0;
    cudaCheck(cudaGetDevice(&dev), "cudaGetDevice");
    if (dev >= kMaxDevices) throw Error(ErrorCode::InvalidArgument, "", "device index beyond 63");
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    if (!streams[dev]) cudaCheck(cudaStreamCreateWithFlags(&streams[dev], cudaStreamNonBlocking), "cudaStreamCreate");
    return streams[dev];
  }
};

struct HostMemory {
  static void* allocZeroed(size_t bytes) {
    void* p = std::calloc(1, bytes ? bytes : 1);
    if (!p) throw Error(ErrorCode::InvalidArgument, "", "out of host memory");
    return p;
  }
  static void release(void* p) { std::free(p); }
  static void upload(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
  static void download(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }
  static void zero(void* p, size_t bytes) { std::memset(p, 0, bytes); }
};

}  // namespace cusync
