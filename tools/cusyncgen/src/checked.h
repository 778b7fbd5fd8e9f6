// 64-bit arithmetic on spec values that reports an overflow as a spec error
// at the construct that overflows, instead of wrapping to a value that might
// still pass every later check.
#pragma once

#include <cstdint>
#include <string>

#include "error.h"

namespace cusyncgen {

[[noreturn]] inline void overflow(Loc at, int64_t a, const char* op, int64_t b) {
  throw SpecError(at, "arithmetic overflow: " + std::to_string(a) + " " + op + " " + std::to_string(b) +
                          " does not fit in 64 bits");
}

inline int64_t checkedAdd(int64_t a, int64_t b, Loc at) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow(at, a, "+", b);
  return r;
}

inline int64_t checkedSub(int64_t a, int64_t b, Loc at) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) overflow(at, a, "-", b);
  return r;
}

inline int64_t checkedMul(int64_t a, int64_t b, Loc at) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow(at, a, "*", b);
  return r;
}

}  // namespace cusyncgen
