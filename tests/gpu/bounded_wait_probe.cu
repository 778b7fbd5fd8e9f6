// Built only with CUSYNC_BOUNDED_WAIT: launches a consumer whose producer
// never runs. The bounded wait must print stage, tile, semaphore, expected
// and seen value and trap, instead of hanging the GPU. CTest matches the
// device's report in the output.
#include <cstdio>

#include "tiled_gemm.cuh"

using namespace cusync;

int main() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    std::printf("no CUDA GPU present\n");
    return 0;
  }
  using examples::kTile;
  Stage<policy::NoSync, policy::RowSync> producer("never-run", Dim3(4, 2), Dim3(kTile, kTile, 1));
  Stage<policy::RowSync, policy::NoSync> consumer("orphan", Dim3(4, 2), Dim3(kTile, kTile, kTile));
  pair(producer, consumer);
  float* buf = nullptr;
  cudaMalloc(&buf, sizeof(float) * 64 * 128 * 3);
  // Launched directly: cusync's launchers refuse a consumer whose producer
  // has not been launched (Stage::requireProducersLaunched); the bounded wait
  // is the device's answer to whatever gets past them.
  examples::tiledGemm<decltype(consumer)::View><<<dim3(consumer.numTiles()), dim3(kTile, kTile)>>>(
      consumer.view(), buf, buf + 64 * 128, buf + 2 * 64 * 128, 64, 128, 128, 128);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("host: kernel ended with '%s'\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 1 : 0;
}
