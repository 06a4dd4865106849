#include "core/hf/qwen_moe_layout.h"

#include "core/hf/config_sizes.h"
#include "core/hf/llama_layout.h"
#include "core/hf/tensor_ops.h"

namespace gptrain::hf {

namespace {

std::string expert(int i, int64_t j) { return hf_layer(i) + "mlp.experts." + std::to_string(j) + "."; }

}  // namespace

void qwen_moe_from_hf_config(const nlohmann::json& j, const std::string& where, ModelConfig& c) {
  MoeConfig& m = c.moe;
  m.num_experts = cfg_size(j, "num_experts", where, max_size::experts);
  if (m.num_experts == 0) fail("{}: \"num_experts\" is 0; a model without experts is not a sparse MoE model", where);
  m.topk = cfg_size(j, "num_experts_per_tok", where, max_size::experts);
  m.ffn_hidden_size = cfg_size(j, "moe_intermediate_size", where, max_size::ffn);
  if (m.ffn_hidden_size == 0) fail("{}: \"moe_intermediate_size\" is 0, expected > 0", where);
  // transformers: layer i is sparse when it is not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0.
  const int step = cfg_size(j, "decoder_sparse_step", where, max_size::layers, 1);
  if (step == 0) fail("{}: \"decoder_sparse_step\" is 0, expected >= 1", where);
  m.layer_pattern.assign(std::size_t(c.num_layers), 0);
  for (int i = 0; i < c.num_layers; ++i) m.layer_pattern[std::size_t(i)] = (i + 1) % step == 0 ? 1 : 0;
  if (j.contains("mlp_only_layers") && !j["mlp_only_layers"].is_null()) {
    const nlohmann::json& d = j["mlp_only_layers"];
    if (!d.is_array()) fail("{}: \"mlp_only_layers\" is {}, expected a list of layer numbers", where, d.dump());
    for (const nlohmann::json& v : d) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= c.num_layers)
        fail("{}: \"mlp_only_layers\" holds {}, expected layer numbers 0 to {}", where, v.dump(), c.num_layers - 1);
      m.layer_pattern[std::size_t(v.get<int64_t>())] = 0;
    }
  }
  if (m.num_moe_layers() == 0)
    fail("{}: decoder_sparse_step {} and mlp_only_layers leave no sparse layer in {} layers", where, step,
         c.num_layers);
  m.score = MoeScore::Softmax;
  m.pre_softmax = !cfg<bool>(j, "norm_topk_prob", where, false);
  // output_router_logits: type-checked only; it changes what transformers' forward returns, not the model.
  cfg<bool>(j, "output_router_logits", where, false);
  m.aux_loss_coeff = cfg<float>(j, "router_aux_loss_coef", where, 0.0f) * float(m.topk);
}

void qwen_moe_hf_config(const ModelConfig& c, nlohmann::json& j) {
  const MoeConfig& m = c.moe;
  j["num_experts"] = m.num_experts;
  j["num_experts_per_tok"] = m.topk;
  j["moe_intermediate_size"] = m.ffn_hidden_size;
  j["decoder_sparse_step"] = 1;
  nlohmann::json dense = nlohmann::json::array();
  for (int i = 0; i < c.num_layers; ++i)
    if (!m.is_moe_layer(i)) dense.push_back(i);
  j["mlp_only_layers"] = dense;
  j["norm_topk_prob"] = !m.pre_softmax;
  j["router_aux_loss_coef"] = m.balance_loss_on() ? m.aux_loss_coeff / float(m.topk) : 0.0f;
  j["output_router_logits"] = false;
}

void require_qwen_moe_shape(const ModelConfig& c, const char* architecture) {
  auto need = [&](bool ok, const char* what) {
    if (!ok) fail("{} cannot express this model: {}", architecture, what);
  };
  const MoeConfig& m = c.moe;
  need(m.enabled(), "it has no MoE layers (--num-experts)");
  need(m.score == MoeScore::Softmax, "the router must be a softmax (--moe-router-score-function softmax)");
  need(!m.sinkhorn(), "no Sinkhorn routing");
  need(m.num_groups == 0, "no group-limited routing (--moe-router-group-topk)");
  need(m.topk_scaling_factor == 0.0f || m.topk_scaling_factor == 1.0f, "no --moe-router-topk-scaling-factor");
  need(m.balance != MoeBalance::SeqAuxLoss || !m.balance_loss_on(),
       "its load-balancing loss is over the whole batch (not --moe-router-load-balancing-type seq_aux_loss)");
  need(!m.z_loss_on(), "no router z-loss (--moe-z-loss-coeff)");
  need(m.capacity_factor < 0.0, "experts are dropless (no --moe-expert-capacity-factor)");
}

void qwen_moe_mlp_to_hf(OutList& o, const ModelConfig& c, int i) {
  const TensorStore* s = &o.src;
  const int64_t C = c.hidden_size;
  const std::string p = gptrain_layer(i) + "mlp.", h = hf_layer(i) + "mlp.";
  if (!c.moe.is_moe_layer(i)) return gated_mlp_to_hf(o, h, p, c.ffn_hidden_size, C, false);
  const int64_t F = c.moe.ffn_hidden_size, NE = c.moe.num_experts;
  o.copy(h + "gate.weight", p + "router.weight", {NE, C});
  const std::string fc1 = p + "experts.linear_fc1.weight", fc2 = p + "experts.linear_fc2.weight";
  for (int64_t j = 0; j < NE; ++j) {
    o.add(expert(i, j) + "gate_proj.weight", {F, C}, [=] {
      return row_range(s->read_checked(fc1, {NE, 2 * F, C}), j * 2 * F, F, C);
    });
    o.add(expert(i, j) + "up_proj.weight", {F, C}, [=] {
      return row_range(s->read_checked(fc1, {NE, 2 * F, C}), j * 2 * F + F, F, C);
    });
    o.add(expert(i, j) + "down_proj.weight", {C, F}, [=] {
      return row_range(s->read_checked(fc2, {NE, C, F}), j * C, C, F);
    });
  }
}

void qwen_moe_mlp_from_hf(OutList& o, const ModelConfig& c, int i) {
  const TensorStore* s = &o.src;
  const int64_t C = c.hidden_size;
  const std::string p = gptrain_layer(i) + "mlp.", h = hf_layer(i) + "mlp.";
  if (!c.moe.is_moe_layer(i)) return gated_mlp_from_hf(o, h, p, c.ffn_hidden_size, C, false);
  const int64_t F = c.moe.ffn_hidden_size, NE = c.moe.num_experts;
  o.copy(p + "router.weight", h + "gate.weight", {NE, C});
  o.add(p + "experts.linear_fc1.weight", {NE, 2 * F, C}, [=] {
    std::vector<std::vector<float>> parts;
    for (int64_t j = 0; j < NE; ++j) {
      parts.push_back(s->read_checked(expert(i, j) + "gate_proj.weight", {F, C}));
      parts.push_back(s->read_checked(expert(i, j) + "up_proj.weight", {F, C}));
    }
    return concat(parts);
  });
  o.add(p + "experts.linear_fc2.weight", {NE, C, F}, [=] {
    std::vector<std::vector<float>> parts;
    for (int64_t j = 0; j < NE; ++j) parts.push_back(s->read_checked(expert(i, j) + "down_proj.weight", {C, F}));
    return concat(parts);
  });
}

}  // namespace gptrain::hf
