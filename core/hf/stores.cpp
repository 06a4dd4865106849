#include "core/hf/stores.h"

#include "core/model/param_layout.h"

namespace gptrain::hf {

using Kind = checkpoint::Checkpoint::Kind;

bool CheckpointStore::has(const std::string& name) const { return ck_.has(Kind::model, name); }
std::vector<int64_t> CheckpointStore::shape(const std::string& name) const {
  return ck_.global_shape(Kind::model, name);
}
std::vector<float> CheckpointStore::read(const std::string& name) const {
  std::vector<float> v = ck_.read_global(Kind::model, name);
  if (norm_shift_ != 0.0f && is_norm_weight(name))
    for (float& x : v) x += norm_shift_;
  return v;
}
void CheckpointStore::read_to(const std::string& name, float* dst, std::size_t n) const {
  ck_.read_global(Kind::model, name, dst, n);
  if (norm_shift_ != 0.0f && is_norm_weight(name))
    for (std::size_t i = 0; i < n; ++i) dst[i] += norm_shift_;
}
std::vector<std::string> CheckpointStore::names() const { return ck_.names(Kind::model); }

std::vector<float> WeightSetStore::read(const std::string& name) const {
  read_.insert(name);
  return ws_.read_f32(name);
}

}  // namespace gptrain::hf

namespace gptrain::hf {
void WeightSetStore::read_to(const std::string& name, float* dst, std::size_t n) const {
  read_.insert(name);
  ws_.read_f32(name, dst, n);
}
}  // namespace gptrain::hf
