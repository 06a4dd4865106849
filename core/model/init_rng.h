// Counter-based random numbers for parameter init: value i of a tensor depends only on (seed, tensor
// name, i), so every sharding of a model (TP, PP, any rank) generates identical global tensors and
// takes its slice, without ever materialising the whole tensor.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/model/param_layout.h"

namespace gptrain {

// 64-bit key of (seed, tensor name).
uint64_t init_key(uint64_t seed, std::string_view name);
// Standard normal sample number `index` of the stream `key` (Box-Muller over hashed counter pairs).
double init_normal(uint64_t key, uint64_t index);
// Uniform sample in (-1, 1] number `index` of the stream `key`.
double init_uniform(uint64_t key, uint64_t index);
// Megatron init of this rank's piece of tensor t into host fp32 out (t.numel): N(0, t.init_std) or
// U(-t.init_bound, t.init_bound) keyed by (seed, t.name, global element index), or zeros / ones.
void init_param_values(const ParamTensor& t, uint64_t seed, float* out);

}  // namespace gptrain
