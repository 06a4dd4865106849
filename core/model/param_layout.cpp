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
  // Row-major: peel the local coordinates from the last dim, map the sharded ones through their blocks.
  int64_t g = 0, gstride = 1;
  for (int d = int(t.local_shape.size()) - 1; d >= 0; --d) {
    int64_t c = i % t.local_shape[d];
    i /= t.local_shape[d];
    for (const auto& b : t.blocks) {  // a dim without blocks is whole: c is already global
      if (b.dim != d) continue;
      if (c < b.length) {
        c += b.global_offset;
        break;
      }
      c -= b.length;
    }
    g += c * gstride;
    gstride *= t.global_shape[d];
  }
  return g;
}

}  // namespace gptrain
