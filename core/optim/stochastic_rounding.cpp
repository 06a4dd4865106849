#include "core/optim/stochastic_rounding.h"

#include "core/common/error.h"

#include <algorithm>

namespace gptrain {

uint32_t rounding_tensor_key(const std::string& name) {
  uint32_t h = 2166136261u;
  for (const unsigned char c : name) h = (h ^ c) * 16777619u;
  return h;
}

std::vector<RoundingRun> stochastic_rounding_runs(const ParamLayout& layout) {
  std::vector<RoundingRun> runs;
  for (const ParamTensor& t : layout.tensors) {
    if (t.numel == 0) continue;
    const uint32_t key = rounding_tensor_key(t.name);
    if (!t.sharded()) {
      runs.push_back({t.offset, t.offset + t.numel, key, 0, t.numel, t.numel});
      continue;
    }
    const auto dim = static_cast<std::size_t>(t.blocks[0].dim);
    uint64_t inner = 1, outer = 1;
    for (std::size_t k = dim + 1; k < t.local_shape.size(); ++k) inner *= uint64_t(t.local_shape[k]);
    for (std::size_t k = 0; k < dim; ++k) outer *= uint64_t(t.local_shape[k]);
    const uint64_t local_d = uint64_t(t.local_shape[dim]), global_d = uint64_t(t.global_shape[dim]);
    if (t.blocks.size() == 1) {
      // One block: its rows (everything from the split dim inwards) are chunk_local long locally.
      const uint64_t b = uint64_t(t.blocks[0].global_offset) * inner;
      runs.push_back({t.offset, t.offset + t.numel, key, b, local_d * inner, global_d * inner});
      continue;
    }
    // Several blocks: one run per block and outer row (a dim-0 split has a single outer row).
    for (uint64_t a = 0; a < outer; ++a) {
      uint64_t at = t.offset + a * local_d * inner;
      for (const ShardBlock& blk : t.blocks) {
        const uint64_t n = uint64_t(blk.length) * inner;
        const uint64_t b = (a * global_d + uint64_t(blk.global_offset)) * inner;
        if (n > 0) runs.push_back({at, at + n, key, b, n, n});
        at += n;
      }
    }
  }
  std::sort(runs.begin(), runs.end(), [](const RoundingRun& x, const RoundingRun& y) { return x.lo < y.lo; });
  for (std::size_t i = 1; i < runs.size(); ++i)
    check(runs[i - 1].hi <= runs[i].lo, "stochastic rounding: tensor runs overlap at element {}", runs[i].lo);
  return runs;
}

}  // namespace gptrain
