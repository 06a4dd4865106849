#include "core/hf/stores.h"

namespace gptrain::hf {

using Kind = checkpoint::Checkpoint::Kind;

bool CheckpointStore::has(const std::string& name) const { return ck_.has(Kind::model, name); }
std::vector<int64_t> CheckpointStore::shape(const std::string& name) const {
  return ck_.global_shape(Kind::model, name);
}
std::vector<float> CheckpointStore::read(const std::string& name) const { return ck_.read_global(Kind::model, name); }
void CheckpointStore::read_to(const std::string& name, float* dst, std::size_t n) const {
  ck_.read_global(Kind::model, name, dst, n);
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
