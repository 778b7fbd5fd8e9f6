// bf16 values as the GPU tests hold them on the host: their bits (what goes
// to the device) and their float values (what the float64 references read).
#pragma once

#include <cuda_bf16.h>

#include <cstdint>
#include <cstring>

namespace cusync_testing {

inline uint16_t bf16Bits(float f) {
  const __nv_bfloat16 b = __float2bfloat16_rn(f);
  uint16_t u;
  std::memcpy(&u, &b, 2);
  return u;
}

inline float bf16Value(uint16_t u) {
  __nv_bfloat16 b;
  std::memcpy(&b, &u, 2);
  return __bfloat162float(b);
}

}  // namespace cusync_testing
