// Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B) <-> Qwen2MoeForCausalLM: Qwen2's attention with q/k/v biases
// (qwen2_layout.h), and in its sparse layers qwen_moe_layout.h's router and experts plus a shared expert
// with a sigmoid gate (Megatron's --moe-shared-expert-gate):
//   mlp.shared_expert.gate_proj ; up_proj = mlp.shared_experts.linear_fc1.weight rows [gate | up]
//   mlp.shared_expert.down_proj           = mlp.shared_experts.linear_fc2.weight
//   mlp.shared_expert_gate.weight (1, C)  = mlp.shared_experts.gate_weight
// Dense layers (mlp_only_layers, decoder_sparse_step) are Qwen2's MLP of width intermediate_size.
#include "core/hf/config_sizes.h"
#include "core/hf/qwen2_layout.h"
#include "core/hf/qwen_moe_layout.h"
#include "core/hf/tensor_ops.h"

namespace gptrain::hf {
namespace {

using checkpoint::ModelDescription;
using nlohmann::json;

constexpr const char* kArch = "Qwen2MoeForCausalLM";

void require_qwen2_moe_shape(const ModelConfig& c) {
  require_qwen2_shape(c, kArch);
  require_qwen_moe_shape(c, kArch);
  if (c.moe.shared_expert_intermediate_size == 0 || !c.moe.shared_expert_gate)
    fail(
        "{} cannot express this model: every sparse layer has a shared expert with a sigmoid gate "
        "(--moe-shared-expert-intermediate-size and --moe-shared-expert-gate)",
        kArch);
}

class Qwen2MoeAdapter final : public LlamaLayoutAdapter {
 public:
  const char* family() const override { return "qwen2_moe"; }
  const char* model_type() const override { return "qwen2_moe"; }

  json hf_config(const ModelDescription& m) const override {
    const ModelConfig& c = m.config;
    require_qwen2_moe_shape(c);
    json j = qwen2_hf_config(c);
    j["architectures"] = {kArch};
    j["model_type"] = "qwen2_moe";
    qwen_moe_hf_config(c, j);
    j["shared_expert_intermediate_size"] = c.moe.shared_expert_intermediate_size;
    return j;
  }

  std::vector<OutTensor> to_hf(const ModelDescription& m, const TensorStore& ck) const override {
    const ModelConfig& c = m.config;
    require_qwen2_moe_shape(c);
    const int64_t C = c.hidden_size, FS = c.moe.shared_expert_intermediate_size;
    OutList o{ck, {}};
    llama_to_hf_except_mlp(o, c);
    for (int i = 0; i < c.num_layers; ++i) {
      qwen_moe_mlp_to_hf(o, c, i);
      if (!c.moe.is_moe_layer(i)) continue;
      const std::string p = gptrain_layer(i) + "mlp.shared_experts.", h = hf_layer(i) + "mlp.";
      gated_mlp_to_hf(o, h + "shared_expert.", p, FS, C, false);
      o.copy(h + "shared_expert_gate.weight", p + "gate_weight", {1, C});
    }
    return std::move(o.out);
  }

  ModelDescription from_hf_config(const json& j, const std::string& where) const override {
    ModelDescription m = qwen2_from_hf_config(j, where);
    m.family = "qwen2_moe";
    ModelConfig& c = m.config;
    qwen_moe_from_hf_config(j, where, c);
    MoeConfig& moe = c.moe;
    moe.shared_expert_intermediate_size = cfg_size(j, "shared_expert_intermediate_size", where, max_size::ffn);
    if (moe.shared_expert_intermediate_size == 0)
      fail("{}: \"shared_expert_intermediate_size\" is 0, expected > 0 (every sparse layer has a shared expert)",
           where);
    moe.shared_expert_gate = true;
    return m;
  }

  std::vector<OutTensor> from_hf(const ModelDescription& m, const TensorStore& hf) const override {
    const ModelConfig& c = m.config;
    const int64_t C = c.hidden_size, FS = c.moe.shared_expert_intermediate_size;
    OutList o{hf, {}};
    llama_from_hf_except_mlp(o, c);
    for (int i = 0; i < c.num_layers; ++i) {
      qwen_moe_mlp_from_hf(o, c, i);
      if (!c.moe.is_moe_layer(i)) continue;
      const std::string p = gptrain_layer(i) + "mlp.shared_experts.", h = hf_layer(i) + "mlp.";
      gated_mlp_from_hf(o, h + "shared_expert.", p, FS, C, false);
      o.copy(p + "gate_weight", h + "shared_expert_gate.weight", {1, C});
    }
    return std::move(o.out);
  }
};

}  // namespace

const Adapter& qwen2_moe_adapter() {
  static const Qwen2MoeAdapter a;
  return a;
}

}  // namespace gptrain::hf
