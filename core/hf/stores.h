// TensorStore views of a gptrain checkpoint (model tensors, global names, reassembled from any
// TP/PP layout) and of a Hugging Face weight set (remembering which tensors were read, so a
// converter can refuse to silently drop weights it does not understand).
#pragma once

#include "core/checkpoint/checkpoint.h"
#include "core/hf/adapter.h"
#include "core/safetensors/sharded.h"

#include <set>

namespace gptrain::hf {

// norm_weight_shift: added to every norm weight read, moving the checkpoint's stored value (gamma, or gamma - 1
// with --apply-layernorm-1p) to what the Hugging Face family stores (Adapter::hf_norm_weight_offset).
class CheckpointStore final : public TensorStore {
 public:
  CheckpointStore(const checkpoint::Checkpoint& ck, float norm_weight_shift)
      : ck_(ck), norm_shift_(norm_weight_shift) {}
  bool has(const std::string& name) const override;
  std::vector<int64_t> shape(const std::string& name) const override;
  std::vector<float> read(const std::string& name) const override;
  void read_to(const std::string& name, float* dst, std::size_t n) const override;
  std::vector<std::string> names() const override;
  std::string where() const override { return ck_.dir(); }

 private:
  const checkpoint::Checkpoint& ck_;
  float norm_shift_;
};

class WeightSetStore final : public TensorStore {
 public:
  explicit WeightSetStore(const safetensors::WeightSet& ws) : ws_(ws) {}
  bool has(const std::string& name) const override { return ws_.has(name); }
  std::vector<int64_t> shape(const std::string& name) const override { return ws_.info(name).shape; }
  std::vector<float> read(const std::string& name) const override;
  void read_to(const std::string& name, float* dst, std::size_t n) const override;
  std::vector<std::string> names() const override { return ws_.names(); }
  std::string where() const override { return ws_.dir(); }
  const std::set<std::string>& read_names() const { return read_; }

 private:
  const safetensors::WeightSet& ws_;
  mutable std::set<std::string> read_;
};

}  // namespace gptrain::hf
