// Where a stage keeps its semaphores, tickets and order table: device memory
// for the GPU, host memory for the CPU emulator. Same Stage code for both.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>

#include <cuda_runtime_api.h>

#include "cusync/error.h"

namespace cusync {

inline void cudaCheck(cudaError_t e, const char* what, const std::string& stage = "") {
  if (e != cudaSuccess) throw Error(ErrorCode::CudaError, stage, std::string(what) + ": " + cudaGetErrorString(e));
}

struct DeviceMemory {
  static void* allocZeroed(size_t bytes) {
    void* p = nullptr;
    cudaCheck(cudaMalloc(&p, bytes), "cudaMalloc");
    cudaCheck(cudaMemset(p, 0, bytes), "cudaMemset");
    return p;
  }
  static void release(void* p) {
    if (p) cudaFree(p);
  }
  static void upload(void* dst, const void* src, size_t bytes) {
    cudaCheck(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
  }
  static void download(void* dst, const void* src, size_t bytes) {
    cudaCheck(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
  }
  static void zero(void* p, size_t bytes) { cudaCheck(cudaMemset(p, 0, bytes), "cudaMemset"); }
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
