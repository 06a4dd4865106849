// Where each parameter element draws its stochastic-rounding bits (--bf16-stochastic-rounding,
// kernels/adamw/adamw_math.h): the key of its tensor's global name and its row-major index in the GLOBAL
// unsharded tensor, so a TP/PP/DP layout rounds every weight as one process does. A layout's flat range
// is cut into runs over which that index is base + (i / chunk_local) * chunk_global + i % chunk_local,
// i the element's offset in the run: a whole replicated tensor, one block of rows, or one block of a
// split inner dimension (its rows of chunk_local elements sit chunk_global apart in the global tensor).
#pragma once

#include "core/model/param_layout.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gptrain {

struct RoundingRun {
  std::size_t lo = 0, hi = 0;  // flat elements of the layout
  uint32_t tensor_key = 0;
  uint64_t base = 0, chunk_local = 1, chunk_global = 1;
};

// FNV-1a (32 bits) of a tensor's global checkpoint name.
uint32_t rounding_tensor_key(const std::string& name);

// The runs of a layout, sorted by lo, covering every element of every tensor.
std::vector<RoundingRun> stochastic_rounding_runs(const ParamLayout& layout);

}  // namespace gptrain
