// The order of an interleaved timing (bench::interleavedMediansMs), apart
// from the CUDA calls, so that CPU tests pin it down.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace bench {

// The candidate of every run of an interleaved timing: each iteration runs
// every one of the n candidates once, back to back, in an order drawn anew
// per iteration (Fisher-Yates over a fixed-seed mt19937, so runs repeat
// exactly). A fixed cyclic order would make a candidate follow the same
// neighbour in almost every iteration; after a host-bound neighbour
// (cuDNN's descriptor calls, launches without graphs) a run starts on an
// idle GPU and its time includes its own enqueueing.
inline std::vector<size_t> interleavedOrder(size_t n, int iterations, uint32_t seed = 1) {
  std::vector<size_t> order;
  if (n == 0 || iterations <= 0) return order;
  order.reserve(n * static_cast<size_t>(iterations));
  std::mt19937 draw(seed);
  std::vector<size_t> perm(n);
  for (int i = 0; i < iterations; ++i) {
    for (size_t k = 0; k < n; ++k) perm[k] = k;
    for (size_t k = n - 1; k > 0; --k) {
      const size_t j = static_cast<size_t>(draw() % (k + 1));
      const size_t t = perm[k];
      perm[k] = perm[j];
      perm[j] = t;
    }
    order.insert(order.end(), perm.begin(), perm.end());
  }
  return order;
}

}  // namespace bench
