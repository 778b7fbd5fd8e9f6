// CuStage and CuSync: the original cuSync API, as a thin layer over the new
// protocol (tickets for tile order, CudaBackend spins and posts). Runs are
// counted on the host (incrementIter), as in the original; a CuStage is
// passed to kernels by value, so it never frees its device state.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#include <cuda_runtime.h>

#include "cusync/backend_cuda.h"
#include "cusync/compat/policies.h"
#include "cusync/compat/tile_orders.h"
#include "cusync/optimizations.h"
#include "cusync/protocol.h"
#include "cusync/tile_order.h"

#define CUDA_CHECK(cmd)                                                                       \
  do {                                                                                        \
    cudaError_t e_ = (cmd);                                                                   \
    if (e_ != cudaSuccess) {                                                                  \
      printf("Failed: Cuda error %s:%d '%s'\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      exit(EXIT_FAILURE);                                                                     \
    }                                                                                         \
  } while (0)

#ifndef DIVUP
#define DIVUP(x, y) (((x) + (y) - 1) / (y))
#endif

namespace cusync {

enum CuSyncError {
  CuSyncErrorNotProducer,
  CuSyncErrorNotConsumer,
  CuSyncErrorNotInitialized,
  CuSyncErrorInvalidLinearBlockIndex,
  CuSyncErrorCUDAError,
  CuSyncSuccess
};

class CuSync;

template <typename TileOrder, typename InputSyncPolicy, typename OutputSyncPolicy, int Opts = NoOptimization>
class CuStage {
 public:
  CuStage(dim3 grid, dim3 tileSize, InputSyncPolicy inputPolicy, OutputSyncPolicy outputPolicy)
      : grid_(grid), prodGrid_(0, 0, 0), tileSize_(tileSize), iter(1), inputPolicy_(inputPolicy),
        outputPolicy_(outputPolicy) {
    // The original's schedule: position blockIndex(grid, tile) holds tile.
    struct ByBlockIndex {
      CUSYNC_HD uint32_t linearIndex(const Dim3& t, const Dim3& g) const {
        return TileOrder().blockIndex(dim3(g.x, g.y, g.z), dim3(t.x, t.y, t.z));
      }
    };
    const std::vector<Dim3> table = buildOrderTable(ByBlockIndex{}, Dim3(grid.x, grid.y, grid.z), "CuStage");
    std::vector<dim3> order(table.size());
    for (size_t i = 0; i < table.size(); ++i) order[i] = dim3(table[i].x, table[i].y, table[i].z);
    CUDA_CHECK(cudaMalloc(&tileOrder_, sizeof(dim3) * order.size()));
    CUDA_CHECK(cudaMemcpy(tileOrder_, order.data(), sizeof(dim3) * order.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMalloc(&tickets_, sizeof(unsigned long long)));
    CUDA_CHECK(cudaMemset(tickets_, 0, sizeof(unsigned long long)));
    if (isProducer()) {
      CUDA_CHECK(cudaMalloc(&tileStatusWrite_, numTiles() * sizeof(uint32_t)));
      CUDA_CHECK(cudaMemset(tileStatusWrite_, 0, numTiles() * sizeof(uint32_t)));
      CUDA_CHECK(cudaMalloc(&kernelExecuted_, sizeof(uint32_t)));
      CUDA_CHECK(cudaMemset(kernelExecuted_, 0, sizeof(uint32_t)));
    }
  }

  CUSYNC_HD CuStage() : iter(1) {}

  dim3 grid() const { return grid_; }

  CuSyncError invokeWaitKernel(cudaStream_t stream);
  void incrementIter() { iter += 1; }

  CUSYNC_HD bool getNoAtomicAdd() const { return Opts & NoAtomicAdd; }
  CUSYNC_HD bool getAvoidWaitKernel() const { return Opts & AvoidWaitKernel; }
  CUSYNC_HD bool getReorderTileLoads() const { return Opts & ReorderTileLoads; }
  CUSYNC_HD bool getAvoidCustomOrder() const { return Opts & AvoidCustomOrder; }
  CUSYNC_HD bool isProducer() const { return !std::is_same<OutputSyncPolicy, NoSync>::value; }
  CUSYNC_HD bool isConsumer() const { return !std::is_same<InputSyncPolicy, NoSync>::value; }
  CUSYNC_HD uint32_t numTiles() const { return grid_.x * grid_.y * grid_.z; }

#if defined(__CUDACC__)
  __device__ uint32_t waitTileIndex(dim3 tile) { return inputPolicy_.tileIndex(tile, prodGrid_); }
  __device__ uint32_t waitSemValue(dim3 tile) { return CudaBackend::loadAcquire(tileStatusRead_ + waitTileIndex(tile)); }
  __device__ uint32_t expectedWaitValue(dim3 tile) { return inputPolicy_.waitValue(tile, prodGrid_); }

  __device__ CuSyncError wait(dim3& tile, uint32_t waitingThread = 0, bool callSync = true) {
    if (!isConsumer()) return CuSyncErrorNotConsumer;
    if (!inputPolicy_.isSync(tile, prodGrid_)) return CuSyncSuccess;
    if (threadIdx.x == waitingThread && threadIdx.y == 0 && threadIdx.z == 0) {
      StallInfo info;
      info.stage = "CuStage";
      info.tile = Dim3(tile.x, tile.y, tile.z);
      info.sem = waitTileIndex(tile);
      protocol::spinUntil<CudaBackend>(tileStatusRead_ + info.sem, iter * expectedWaitValue(tile), info);
    }
    if (callSync) __syncthreads();
    return CuSyncSuccess;
  }

  __device__ CuSyncError post(const dim3& tile, uint32_t postThread = 0) {
    if (!isProducer()) return CuSyncErrorNotProducer;
    __syncthreads();
    if (threadIdx.x == postThread && threadIdx.y == 0 && threadIdx.z == 0) {
      CudaBackend::fenceGpu();
      const uint32_t idx = outputPolicy_.tileIndex(tile, grid_);
      const uint32_t value = outputPolicy_.postValue(tile, grid_);
      if (getNoAtomicAdd())
        CudaBackend::storeRelease(tileStatusWrite_ + idx, value * iter);
      else
        CudaBackend::addRelease(tileStatusWrite_ + idx, value);
    }
    __syncwarp();
    return CuSyncSuccess;
  }

  // The next tile to process; marks the producer as started for the wait kernel.
  __device__ dim3 tile(dim3* sharedStorage) {
    const bool leader = threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0;
    if (!getAvoidWaitKernel() && isProducer() && leader && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0)
      CudaBackend::storeRelease(kernelExecuted_, iter);
    if (getAvoidCustomOrder() || sharedStorage == nullptr) return blockIdx;
    if (leader) *sharedStorage = tileOrder_[CudaBackend::takeTicket(tickets_) % numTiles()];
    __syncthreads();
    return *sharedStorage;
  }
#endif

 private:
  friend class CuSync;

  dim3 grid_;
  dim3 prodGrid_;
  dim3 tileSize_;
  uint32_t iter;
  InputSyncPolicy inputPolicy_;
  OutputSyncPolicy outputPolicy_;
  dim3* tileOrder_ = nullptr;
  unsigned long long* tickets_ = nullptr;
  uint32_t* kernelExecuted_ = nullptr;
  uint32_t* tileStatusWrite_ = nullptr;
  uint32_t* tileStatusRead_ = nullptr;
};

struct CuSync {
  template <typename Stage1, typename Stage2>
  static CuSyncError setProducerConsumerPair(Stage1& prod, Stage2& cons) {
    if (!prod.isProducer()) return CuSyncErrorNotProducer;
    if (!cons.isConsumer()) return CuSyncErrorNotConsumer;
    if (prod.tileStatusWrite_ == nullptr) return CuSyncErrorNotInitialized;
    cons.prodGrid_ = prod.grid_;
    cons.tileStatusRead_ = prod.tileStatusWrite_;
    return CuSyncSuccess;
  }
};

#if defined(__CUDACC__)
namespace detail {
template <int = 0>
__global__ void compatWaitKernel(const uint32_t* executed, uint32_t iter) {
  StallInfo info;
  info.stage = "wait kernel";
  protocol::spinUntil<CudaBackend>(executed, iter, info);
}
}  // namespace detail

template <typename TileOrder, typename In, typename Out, int Opts>
CuSyncError CuStage<TileOrder, In, Out, Opts>::invokeWaitKernel(cudaStream_t stream) {
  if (!isProducer()) return CuSyncErrorNotProducer;
  if (!getAvoidWaitKernel()) detail::compatWaitKernel<<<1, 1, 0, stream>>>(kernelExecuted_, iter);
  if (cudaGetLastError() != cudaSuccess) return CuSyncErrorCUDAError;
  return CuSyncSuccess;
}
#endif

}  // namespace cusync
