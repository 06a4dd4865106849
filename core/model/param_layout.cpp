#include "core/model/param_layout.h"

#include "core/common/error.h"
#include "core/model/stage_tensors.h"

#include <unordered_set>

namespace gptrain {

const ParamTensor* ParamLayout::find(const std::string& name) const {
  for (const auto& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

const ParamTensor& ParamLayout::at(const std::string& name) const {
  const ParamTensor* t = find(name);
  if (!t) fail("model has no parameter tensor '{}'", name);
  return *t;
}

ParamLayout build_param_layout(const StageConfig& c) {
  // The stage's tensors in list order (stage_tensors.h), each name once.
  std::vector<ParamTensor> all;
  std::unordered_set<std::string> names;
  StageTensors<const void*> unbound;
  for_each_stage_tensor(TensorSpecs(c), unbound, [&](ParamTensor t, const void*&) {
    if (names.insert(t.name).second) all.push_back(std::move(t));
  });

  ParamLayout layout;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& t : all) {
      if (t.decay != (pass == 0)) continue;
      t.offset = layout.total;
      layout.total += t.numel;
      layout.tensors.push_back(t);
    }
    if (pass == 0) layout.num_decay = layout.total;
  }
  return layout;
}

bool is_norm_weight(const std::string& name) {
  const std::string suffix = "layernorm.weight";
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int64_t local_to_global_index(const ParamTensor& t, int64_t i) {
  if (!t.sharded()) return i;
  const int dim = t.blocks[0].dim;
  // Row-major: split i into (outer, d, inner) around the sharded dim.
  int64_t inner = 1;
  for (std::size_t k = dim + 1; k < t.local_shape.size(); ++k) inner *= t.local_shape[k];
  const int64_t local_d = t.local_shape[dim];
  const int64_t outer = i / (inner * local_d);
  int64_t d = (i / inner) % local_d;
  const int64_t in = i % inner;
  int64_t gd = -1;
  for (const auto& b : t.blocks) {
    if (d < b.length) {
      gd = b.global_offset + d;
      break;
    }
    d -= b.length;
  }
  return (outer * t.global_shape[dim] + gd) * inner + in;
}

}  // namespace gptrain
