// The attention benchmark's shapes (issue targets, tools/torch_baselines.py),
// for the CPU tests of the block's plans.
#pragma once

#include <cstdint>
#include <vector>

namespace cusync_attn::test_shapes {

struct Shape {
  int64_t M, L;
};

// Decode: M new tokens after L cached ones; prefill: L = 0.
inline std::vector<Shape> benchmarkShapes() {
  std::vector<Shape> s;
  for (int64_t L : {1024, 4096})
    for (int64_t M : {1, 8, 32, 64, 128, 256}) s.push_back({M, L});
  for (int64_t M : {512, 1024, 2048, 4096}) s.push_back({M, 0});
  return s;
}

}  // namespace cusync_attn::test_shapes
