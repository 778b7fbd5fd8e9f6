// The relative error ||out - ref|| / ||ref|| of a bf16 result against a
// reference (fp32 or bf16), accumulated on the GPU, so that checking a large
// output copies nothing back but three numbers.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

namespace bench {

// sums[0] += sum (out - ref)^2, sums[1] += sum ref^2; *bad += non-finite outputs.
template <class Ref>
__global__ void relErrSums(const __nv_bfloat16* out, const Ref* ref, int64_t n, double* sums,
                           unsigned long long* bad) {
  double num = 0, den = 0;
  unsigned long long nb = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float o = __bfloat162float(out[i]);
    float r;
    if constexpr (sizeof(Ref) == 2) r = __bfloat162float(ref[i]);
    else r = ref[i];
    if (!isfinite(o)) ++nb;
    else num += double(o - r) * (o - r);
    den += double(r) * r;
  }
  for (int off = 16; off > 0; off /= 2) {
    num += __shfl_down_sync(0xffffffffu, num, off);
    den += __shfl_down_sync(0xffffffffu, den, off);
    nb += __shfl_down_sync(0xffffffffu, nb, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&sums[0], num);
    atomicAdd(&sums[1], den);
    if (nb) atomicAdd(bad, nb);
  }
}

// The relative error of bf16 results against a reference (fp32 or bf16),
// over any number of slices: add() each, then value(); all on stream s.
class RelErr {
 public:
  explicit RelErr(cudaStream_t s) : s_(s) {
    if (cudaMalloc(&d_, 2 * sizeof(double) + sizeof(unsigned long long)) == cudaSuccess)
      status_ = cudaMemsetAsync(d_, 0, 2 * sizeof(double) + sizeof(unsigned long long), s_);
    else
      d_ = nullptr, status_ = cudaErrorMemoryAllocation;
  }
  ~RelErr() { cudaFree(d_); }
  RelErr(const RelErr&) = delete;
  RelErr& operator=(const RelErr&) = delete;

  template <class Ref>
  void add(const void* out, const Ref* ref, int64_t n) {
    if (status_ != cudaSuccess || n == 0) return;
    relErrSums<Ref><<<512, 256, 0, s_>>>(static_cast<const __nv_bfloat16*>(out), ref, n, sums(), bad());
    status_ = cudaGetLastError();
  }
  // ||out - ref|| / ||ref|| (||ref|| taken as 1 where it is 0); infinity
  // with a non-finite output; NaN when a CUDA call failed (status()).
  double value() {
    if (status_ == cudaSuccess) status_ = cudaStreamSynchronize(s_);
    double h[2] = {0, 0};
    unsigned long long nb = 0;
    if (status_ == cudaSuccess) status_ = cudaMemcpy(h, d_, sizeof h, cudaMemcpyDeviceToHost);
    if (status_ == cudaSuccess) status_ = cudaMemcpy(&nb, bad(), sizeof nb, cudaMemcpyDeviceToHost);
    if (status_ != cudaSuccess) return NAN;
    if (nb) return INFINITY;
    return std::sqrt(h[0] / (h[1] > 0 ? h[1] : 1));
  }
  cudaError_t status() const { return status_; }

 private:
  double* sums() { return static_cast<double*>(d_); }
  unsigned long long* bad() { return reinterpret_cast<unsigned long long*>(static_cast<double*>(d_) + 2); }
  cudaStream_t s_;
  void* d_ = nullptr;
  cudaError_t status_ = cudaSuccess;
};

}  // namespace bench
