// numpy.random.RandomState(seed).shuffle reproduced bit for bit, so our sample order equals Megatron's.
// RandomState(int seed) is classic MT19937 init_genrand (== std::mt19937(seed)); shuffle is Fisher-Yates
// from the top with numpy's legacy bounded draw: mask = max smeared right, redraw until <= max, using
// one 32-bit word when max fits in 32 bits and (hi << 32 | lo) otherwise. NEP 19 freezes this stream.
#pragma once

#include <cstdint>
#include <random>
#include <utility>

namespace gptrain {

class NumpyRandomState {
 public:
  explicit NumpyRandomState(uint32_t seed) : gen_(seed) {}

  uint32_t next32() { return static_cast<uint32_t>(gen_()); }

  // Uniform integer in [0, max], numpy's legacy "random_interval".
  uint64_t bounded(uint64_t max) {
    if (max == 0) return 0;
    uint64_t mask = max;
    mask |= mask >> 1;
    mask |= mask >> 2;
    mask |= mask >> 4;
    mask |= mask >> 8;
    mask |= mask >> 16;
    mask |= mask >> 32;
    uint64_t v;
    if (max <= 0xffffffffULL) {
      do v = next32() & mask;
      while (v > max);
    } else {
      do {
        const uint64_t hi = next32();
        v = ((hi << 32) | next32()) & mask;
      } while (v > max);
    }
    return v;
  }

  // RandomState.shuffle of a 1-D array; the element type does not change the draws.
  template <typename T>
  void shuffle(T* a, int64_t n) {
    for (int64_t i = n - 1; i >= 1; --i) {
      const auto j = static_cast<int64_t>(bounded(static_cast<uint64_t>(i)));
      std::swap(a[i], a[j]);
    }
  }

 private:
  std::mt19937 gen_;
};

}  // namespace gptrain
