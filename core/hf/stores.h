// TensorStore views of a gptrain checkpoint (model tensors, global names, reassembled from any
// TP/PP layout) and of a Hugging Face weight set (remembering which tensors were read, so a
// converter can refuse to silently drop weights it does not understand).
#pragma once

#include "core/checkpoint/checkpoint.h"
#include "core/hf/adapter.h"
#include "core/safetensors/sharded.h"

#include <set>

namespace gptrain::hf {

// norms_store_gamma_minus_1: the checkpoint was trained with --apply-layernorm-1p; its norm weights are
// read as 1 + w, the gamma Hugging Face stores.
class CheckpointStore final : public TensorStore {
 public:
  CheckpointStore(const checkpoint::Checkpoint& ck, bool norms_store_gamma_minus_1)
      : ck_(ck), one_plus_norms_(norms_store_gamma_minus_1) {}
  bool has(const std::string& name) const override;
  std::vector<int64_t> shape(const std::string& name) const override;
  std::vector<float> read(const std::string& name) const override;
  void read_to(const std::string& name, float* dst, std::size_t n) const override;
  std::vector<std::string> names() const override;
  std::string where() const override { return ck_.dir(); }

 private:
  const checkpoint::Checkpoint& ck_;
  bool one_plus_norms_;
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
