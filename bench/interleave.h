// The order of an interleaved timing (bench::interleavedMediansMs), apart
// from the CUDA calls, so that CPU tests pin it down.
#pragma once

#include <cstddef>
#include <vector>

namespace bench {

// The candidate of every run of an interleaved timing: iteration i runs each
// of the n candidates once, back to back, starting with candidate i % n, so
// that each comes first equally often over n iterations.
inline std::vector<size_t> interleavedOrder(size_t n, int iterations) {
  std::vector<size_t> order;
  order.reserve(n * static_cast<size_t>(iterations > 0 ? iterations : 0));
  for (int i = 0; i < iterations; ++i)
    for (size_t k = 0; k < n; ++k) order.push_back((static_cast<size_t>(i) + k) % n);
  return order;
}

}  // namespace bench
