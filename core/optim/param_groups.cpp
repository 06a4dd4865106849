#include "core/optim/param_groups.h"

#include "core/common/error.h"

namespace gptrain {

bool uses_decoupled_lr(const ParamTensor& t) {
  return t.name == "embedding.word_embeddings.weight" || t.name == "output_layer.weight";
}

bool uses_muon(const ParamTensor& t) { return t.local_shape.size() == 2 && !uses_decoupled_lr(t); }

std::vector<ParamGroupRange> param_group_ranges(const ParamLayout& layout, bool split_matrices) {
  std::vector<ParamGroupRange> out;
  for (const ParamTensor& t : layout.tensors) {
    if (t.numel == 0) continue;
    const ParamGroupRange r{t.offset, t.offset + t.numel, t.decay, uses_decoupled_lr(t),
                            split_matrices && uses_muon(t)};
    if (!out.empty() && out.back().hi == r.lo && out.back().decay == r.decay &&
        out.back().decoupled_lr == r.decoupled_lr && out.back().matrix == r.matrix)
      out.back().hi = r.hi;
    else
      out.push_back(r);
  }
  std::size_t at = 0;
  for (const ParamGroupRange& r : out) {
    check(r.lo == at, "parameter layout: element {} is in no tensor (next tensor starts at {})", at, r.lo);
    at = r.hi;
  }
  check(at == layout.total, "parameter layout: tensors cover {} of {} elements", at, layout.total);
  return out;
}

std::vector<ParamGroupRange> decay_split_ranges(std::size_t total, std::size_t num_decay) {
  check(num_decay <= total, "{} decayed elements of {}", num_decay, total);
  std::vector<ParamGroupRange> out;
  if (num_decay > 0) out.push_back({0, num_decay, true, false});
  if (total > num_decay) out.push_back({num_decay, total, false, false});
  return out;
}

}  // namespace gptrain
