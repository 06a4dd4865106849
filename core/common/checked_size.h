// Byte counts that must not wrap: the memory plan and the activation arena's layout add and multiply sizes
// that come from the flags (--seq-length 2147483647 ...), and a size beyond 64 bits would otherwise wrap into
// a small, plausible number. Beyond it, an Error naming `what`: such a size cannot be represented (nor held).
#pragma once

#include "core/common/error.h"

#include <cstddef>
#include <string_view>

namespace gptrain {

[[noreturn]] inline void fail_size_beyond_64_bits(std::string_view what) {
  fail(
      "{}: more than 2^64 bytes (16 EiB); sizes this large cannot be represented (check --seq-length, "
      "--micro-batch-size, --hidden-size, --num-layers and the vocabulary)",
      what);
}

inline std::size_t checked_add(std::size_t a, std::size_t b, std::string_view what) {
  std::size_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) fail_size_beyond_64_bits(what);
  return r;
}

inline std::size_t checked_mul(std::size_t a, std::size_t b, std::string_view what) {
  std::size_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) fail_size_beyond_64_bits(what);
  return r;
}

}  // namespace gptrain
