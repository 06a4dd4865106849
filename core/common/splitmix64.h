// SplitMix64's finaliser: a fast, well-mixed 64-bit hash, used wherever a deterministic value must
// depend only on a counter/key (parameter init, mock data, data shuffling seeds), never on call order.
#pragma once

#include <cstdint>

namespace gptrain {

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace gptrain
