// CPU twin of dropout with the counter-based RNG of philox.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gptrain::cpu {

// out = inp * keep / (1 - p), keep_i = philox_uniform(seed, offset + i) >= p. Backward: same with dout.
void dropout(float* out, const float* inp, std::size_t n, float p, uint64_t seed, uint64_t offset);

// mult[i] = (philox_uniform(seed, j0 + i) >= p ? scale : 0) for i < count: the mask of n consecutive
// indices as multipliers (used by attention dropout on probability rows).
void dropout_multipliers(float* mult, std::size_t count, uint64_t seed, uint64_t j0, float p, float scale);

}  // namespace gptrain::cpu
