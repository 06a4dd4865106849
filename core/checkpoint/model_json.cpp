#include "core/checkpoint/model_json.h"

#include "core/common/error.h"

namespace gptrain::checkpoint {

using nlohmann::json;

namespace {

const char* score_name(MoeScore s) { return s == MoeScore::Softmax ? "softmax" : "sigmoid"; }
const char* drop_name(MoeDropPolicy p) { return p == MoeDropPolicy::Probs ? "probs" : "position"; }
const char* balance_name(MoeBalance b) {
  if (b == MoeBalance::Sinkhorn) return "sinkhorn";
  return b == MoeBalance::AuxLoss ? "aux_loss" : b == MoeBalance::SeqAuxLoss ? "seq_aux_loss" : "none";
}

// Llama-3 RoPE scaling: null when off, else its type and the four numbers (Hugging Face's key names).
json rope_scaling_to_json(const RopeScaling& s) {
  if (!s.llama3) return nullptr;
  return json{{"type", "llama3"},
              {"factor", s.factor},
              {"low_freq_factor", s.low_freq_factor},
              {"high_freq_factor", s.high_freq_factor},
              {"original_max_position_embeddings", s.original_max_positions}};
}

// Linear position interpolation: null when off (factor 1).
json interpolation_to_json(const RopeScaling& s) {
  if (s.seq_len_interpolation_factor == 1.0) return nullptr;
  return s.seq_len_interpolation_factor;
}

// YaRN: null when off, else Megatron's numbers under its config names (without the yarn_ prefix).
json yarn_to_json(const RopeScaling& s) {
  if (!s.yarn) return nullptr;
  return json{{"rotary_scaling_factor", s.yarn_factor},
              {"original_max_position_embeddings", s.yarn_original_max_positions},
              {"beta_fast", s.yarn_beta_fast},
              {"beta_slow", s.yarn_beta_slow},
              {"correction_range_round_to_int", s.yarn_round_to_int},
              {"mscale", s.yarn_mscale},
              {"mscale_all_dim", s.yarn_mscale_all_dim}};
}

// The MoE part of the model: the architecture (experts, which layers, widths) and the router settings.
// The experts' weights are stored stacked, (E, out, in) per layer (docs/checkpoint-format.md).
json moe_to_json(const MoeConfig& m) {
  return json{{"num_experts", m.num_experts},
              {"layer_pattern", m.layer_pattern},
              {"router_topk", m.topk},
              {"router_score_function", score_name(m.score)},
              {"router_pre_softmax", m.pre_softmax},
              {"router_topk_scaling_factor", m.topk_scaling_factor},
              {"ffn_hidden_size", m.ffn_hidden_size},
              {"shared_expert_intermediate_size", m.shared_expert_intermediate_size},
              {"shared_expert_gate", m.shared_expert_gate},
              {"expert_capacity_factor", m.capacity_factor > 0.0 ? json(m.capacity_factor) : json(nullptr)},
              {"token_drop_policy", drop_name(m.drop_policy)},
              {"pad_expert_input_to_capacity", m.pad_to_capacity},
              {"router_load_balancing_type", balance_name(m.balance)},
              {"aux_loss_coeff", m.aux_loss_coeff},
              {"z_loss_coeff", m.z_loss_coeff},
              {"router_enable_expert_bias", m.expert_bias},
              {"router_bias_update_rate", m.bias_update_rate},
              {"router_num_groups", m.num_groups},
              {"router_group_topk", m.group_topk},
              {"input_jitter_eps", m.input_jitter_eps},
              {"expert_layout", "stacked"}};
}

}  // namespace

json model_to_json(const ModelDescription& m) {
  const ModelConfig& c = m.config;
  json j = json{
      {"family", m.family},
      {"num_layers", c.num_layers},
      {"hidden_size", c.hidden_size},
      {"num_attention_heads", c.num_attention_heads},
      {"num_query_groups", c.num_query_groups},
      {"kv_channels", c.kv_channels},
      {"ffn_hidden_size", c.ffn_hidden_size},
      {"vocab_size", c.vocab_size},
      {"padded_vocab_size", c.padded_vocab_size},
      {"max_position_embeddings", c.max_position_embeddings},
      {"seq_length", c.seq_length},
      {"normalization", normalization_name(c.normalization)},
      {"norm_epsilon", c.norm_epsilon},
      {"apply_layernorm_1p", c.apply_layernorm_1p},
      {"qk_layernorm", c.qk_layernorm},
      {"qk_l2_norm", c.qk_l2_norm},
      {"position_embedding_type", position_embedding_name(c.position_embedding)},
      {"rotary_percent", c.rotary_percent},
      {"rotary_base", c.rotary_base},
      {"rotary_interleaved", c.rotary_interleaved},
      {"rope_scaling", rope_scaling_to_json(c.rope_scaling)},
      {"rotary_seq_len_interpolation_factor", interpolation_to_json(c.rope_scaling)},
      {"yarn", yarn_to_json(c.rope_scaling)},
      {"window_size", c.window_size},
      {"window_attn_skip_freq", c.window_attn_skip_freq},
      {"swiglu", c.swiglu},
      {"geglu", c.geglu},
      {"squared_relu", c.squared_relu},
      {"scale_embeddings_by_sqrt_hidden", c.scale_embeddings_by_sqrt_hidden},
      {"gelu", c.gelu == GeluKind::Tanh ? "tanh" : "erf"},
      {"add_bias_linear", c.add_bias_linear},
      {"add_qkv_bias", c.add_qkv_bias},
      {"disable_bias_attention", c.disable_bias_attention},
      {"untie_embeddings_and_output_weights", c.untie_embeddings_and_output_weights},
      {"output_layer_bias", c.output_layer_bias},
      {"parallel_residual", parallel_residual_name(c.parallel_residual)},
      {"init_method_std", c.init_method_std},
      {"init_method_xavier_uniform", c.init_method_xavier_uniform},
      {"embedding_init_method_std", c.embedding_init_method_std ? json(*c.embedding_init_method_std) : json(nullptr)},
      {"hidden_dropout", c.hidden_dropout},
      {"attention_dropout", c.attention_dropout},
      {"tokenizer_type", m.tokenizer_type},
  };
  if (c.moe.enabled()) j["moe"] = moe_to_json(c.moe);
  return j;
}

namespace {
template <typename T>
T field(const json& j, const char* key, const std::string& where, const T* fallback) {
  if (!j.contains(key) || j[key].is_null()) {
    if (!fallback) fail("{}: model.{} is missing", where, key);
    return *fallback;
  }
  try {
    return j[key].get<T>();
  } catch (const json::exception&) {
    fail("{}: model.{} has the wrong type ({})", where, key, j[key].type_name());
  }
}
template <typename T>
T req(const json& j, const char* key, const std::string& where) {
  return field<T>(j, key, where, nullptr);
}
template <typename T>
T opt(const json& j, const char* key, const std::string& where, T fallback) {
  return field<T>(j, key, where, &fallback);
}
}  // namespace

namespace {

RopeScaling rope_scaling_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) fail("{} must be null or an object", where);
  const auto type = req<std::string>(j, "type", where);
  if (type != "llama3") fail("{}.type is \"{}\"; gptrain implements \"llama3\"", where, type);
  RopeScaling s;
  s.llama3 = true;
  s.factor = req<double>(j, "factor", where);
  s.low_freq_factor = req<double>(j, "low_freq_factor", where);
  s.high_freq_factor = req<double>(j, "high_freq_factor", where);
  s.original_max_positions = req<int>(j, "original_max_position_embeddings", where);
  return s;
}

void yarn_from_json(const json& j, const std::string& where, RopeScaling& s) {
  if (!j.is_object()) fail("{} must be null or an object", where);
  s.yarn = true;
  s.yarn_factor = req<double>(j, "rotary_scaling_factor", where);
  s.yarn_original_max_positions = req<int>(j, "original_max_position_embeddings", where);
  s.yarn_beta_fast = req<double>(j, "beta_fast", where);
  s.yarn_beta_slow = req<double>(j, "beta_slow", where);
  s.yarn_round_to_int = req<bool>(j, "correction_range_round_to_int", where);
  s.yarn_mscale = req<double>(j, "mscale", where);
  s.yarn_mscale_all_dim = req<double>(j, "mscale_all_dim", where);
}

MoeConfig moe_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) fail("{} must be an object", where);
  MoeConfig m;
  m.num_experts = req<int>(j, "num_experts", where);
  m.layer_pattern = req<std::vector<int>>(j, "layer_pattern", where);
  m.topk = req<int>(j, "router_topk", where);
  m.score = parse_moe_score(opt<std::string>(j, "router_score_function", where, "softmax"));
  m.pre_softmax = opt<bool>(j, "router_pre_softmax", where, false);
  m.topk_scaling_factor = opt<float>(j, "router_topk_scaling_factor", where, 0.0f);
  m.ffn_hidden_size = req<int>(j, "ffn_hidden_size", where);
  m.shared_expert_intermediate_size = opt<int>(j, "shared_expert_intermediate_size", where, 0);
  m.shared_expert_gate = opt<bool>(j, "shared_expert_gate", where, false);
  m.capacity_factor = opt<double>(j, "expert_capacity_factor", where, -1.0);
  m.drop_policy = parse_moe_drop_policy(opt<std::string>(j, "token_drop_policy", where, "probs"));
  m.pad_to_capacity = opt<bool>(j, "pad_expert_input_to_capacity", where, false);
  m.balance = parse_moe_balance(opt<std::string>(j, "router_load_balancing_type", where, "aux_loss"));
  m.aux_loss_coeff = opt<float>(j, "aux_loss_coeff", where, 0.0f);
  m.z_loss_coeff = opt<float>(j, "z_loss_coeff", where, 0.0f);
  m.expert_bias = opt<bool>(j, "router_enable_expert_bias", where, false);
  m.bias_update_rate = opt<float>(j, "router_bias_update_rate", where, 1e-3f);
  m.num_groups = opt<int>(j, "router_num_groups", where, 0);
  m.group_topk = opt<int>(j, "router_group_topk", where, 0);
  m.input_jitter_eps = opt<float>(j, "input_jitter_eps", where, 0.0f);
  const auto layout = opt<std::string>(j, "expert_layout", where, "stacked");
  if (layout != "stacked") fail("{}.expert_layout is \"{}\"; gptrain reads \"stacked\" experts", where, layout);
  return m;
}

}  // namespace

ModelDescription model_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) fail("{}: \"model\" must be an object", where);
  ModelDescription m;
  ModelConfig& c = m.config;
  m.tokenizer_type = opt<std::string>(j, "tokenizer_type", where, "GPT2BPETokenizer");
  c.num_layers = req<int>(j, "num_layers", where);
  c.hidden_size = req<int>(j, "hidden_size", where);
  c.num_attention_heads = req<int>(j, "num_attention_heads", where);
  c.num_query_groups = opt<int>(j, "num_query_groups", where, c.num_attention_heads);
  c.kv_channels = opt<int>(j, "kv_channels", where, 0);
  c.ffn_hidden_size = opt<int>(j, "ffn_hidden_size", where, 0);
  c.vocab_size = req<int>(j, "vocab_size", where);
  c.padded_vocab_size = req<int>(j, "padded_vocab_size", where);
  c.max_position_embeddings = req<int>(j, "max_position_embeddings", where);
  c.seq_length = opt<int>(j, "seq_length", where, c.max_position_embeddings);
  c.normalization = parse_normalization(opt<std::string>(j, "normalization", where, "LayerNorm"));
  c.norm_epsilon = opt<float>(j, "norm_epsilon", where, 1e-5f);
  c.apply_layernorm_1p = opt<bool>(j, "apply_layernorm_1p", where, false);  // absent before it existed
  c.qk_layernorm = opt<bool>(j, "qk_layernorm", where, false);              // absent before it existed
  c.qk_l2_norm = opt<bool>(j, "qk_l2_norm", where, false);                  // absent before it existed
  c.position_embedding =
      parse_position_embedding(opt<std::string>(j, "position_embedding_type", where, "learned_absolute"));
  c.rotary_percent = opt<float>(j, "rotary_percent", where, 1.0f);
  c.rotary_base = opt<float>(j, "rotary_base", where, 10000.0f);
  c.rotary_interleaved = opt<bool>(j, "rotary_interleaved", where, false);
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())  // absent before it existed: off
    c.rope_scaling = rope_scaling_from_json(j["rope_scaling"], where + ": model.rope_scaling");
  if (j.contains("rotary_seq_len_interpolation_factor") && !j["rotary_seq_len_interpolation_factor"].is_null())
    c.rope_scaling.seq_len_interpolation_factor = req<double>(j, "rotary_seq_len_interpolation_factor", where);
  if (j.contains("yarn") && !j["yarn"].is_null()) yarn_from_json(j["yarn"], where + ": model.yarn", c.rope_scaling);
  c.window_size = opt<int>(j, "window_size", where, -1);                     // absent before it existed
  c.window_attn_skip_freq = opt<int>(j, "window_attn_skip_freq", where, 0);  // absent before it existed
  c.swiglu = opt<bool>(j, "swiglu", where, false);
  c.geglu = opt<bool>(j, "geglu", where, false);                // absent before it existed
  c.squared_relu = opt<bool>(j, "squared_relu", where, false);  // absent before it existed
  c.scale_embeddings_by_sqrt_hidden = opt<bool>(j, "scale_embeddings_by_sqrt_hidden", where, false);
  const auto gelu = opt<std::string>(j, "gelu", where, "tanh");
  if (gelu != "tanh" && gelu != "erf") fail("{}: model.gelu is \"{}\", expected \"tanh\" or \"erf\"", where, gelu);
  c.gelu = gelu == "tanh" ? GeluKind::Tanh : GeluKind::Erf;
  c.add_bias_linear = opt<bool>(j, "add_bias_linear", where, true);
  c.add_qkv_bias = opt<bool>(j, "add_qkv_bias", where, false);
  c.disable_bias_attention = opt<bool>(j, "disable_bias_attention", where, false);  // absent before it existed
  c.untie_embeddings_and_output_weights = opt<bool>(j, "untie_embeddings_and_output_weights", where, false);
  c.output_layer_bias = opt<bool>(j, "output_layer_bias", where, false);
  c.parallel_residual = parse_parallel_residual(opt<std::string>(j, "parallel_residual", where, "none"));
  c.init_method_std = opt<float>(j, "init_method_std", where, 0.02f);
  c.init_method_xavier_uniform = opt<bool>(j, "init_method_xavier_uniform", where, false);  // absent before it existed
  if (j.contains("embedding_init_method_std") && !j["embedding_init_method_std"].is_null())
    c.embedding_init_method_std = opt<float>(j, "embedding_init_method_std", where, 0.0f);
  c.hidden_dropout = opt<float>(j, "hidden_dropout", where, 0.1f);
  c.attention_dropout = opt<float>(j, "attention_dropout", where, 0.1f);
  if (c.kv_channels <= 0) {
    if (c.hidden_size % c.num_attention_heads != 0)
      fail("{}: model.kv_channels missing and hidden_size not divisible by heads", where);
    c.kv_channels = c.hidden_size / c.num_attention_heads;
  }
  if (c.ffn_hidden_size <= 0) fail("{}: model.ffn_hidden_size is missing", where);
  if (c.padded_vocab_size < c.vocab_size)
    fail("{}: model.padded_vocab_size {} is smaller than vocab_size {}", where, c.padded_vocab_size, c.vocab_size);
  if (j.contains("moe") && !j["moe"].is_null()) c.moe = moe_from_json(j["moe"], where + ": model.moe");
  m.family = opt<std::string>(j, "family", where, "");
  return m;
}

std::string model_differences(const json& checkpoint_model, const ModelConfig& run) {
  if (!checkpoint_model.is_object()) return "";
  ModelConfig ck;
  try {
    ck = model_from_json(checkpoint_model, "checkpoint").config;  // fills the defaults of absent fields
  } catch (const Error&) {
    return "";
  }
  const json a = model_to_json({"", "", ck}), b = model_to_json({"", "", run});
  std::string out;
  // Shape and switches only: sequence length, dropout, init and padding are the run's business.
  for (const char* k : {"num_layers",
                        "hidden_size",
                        "num_attention_heads",
                        "num_query_groups",
                        "kv_channels",
                        "ffn_hidden_size",
                        "normalization",
                        "apply_layernorm_1p",
                        "qk_layernorm",
                        "qk_l2_norm",
                        "position_embedding_type",
                        "swiglu",
                        "add_bias_linear",
                        "add_qkv_bias",
                        "disable_bias_attention",
                        "untie_embeddings_and_output_weights",
                        "output_layer_bias",
                        "parallel_residual",
                        "rope_scaling",
                        "rotary_seq_len_interpolation_factor",
                        "yarn",
                        "window_size",
                        "window_attn_skip_freq",
                        "geglu",
                        "squared_relu",
                        "scale_embeddings_by_sqrt_hidden"}) {
    if (a[k] == b[k]) continue;
    if (!out.empty()) out += "; ";
    out += std::string(k) + " (checkpoint " + a[k].dump() + ", this run " + b[k].dump() + ")";
  }
  // The MoE shape (the router and capacity settings are the run's business, as dropout is).
  for (const char* k :
       {"num_experts", "layer_pattern", "ffn_hidden_size", "shared_expert_intermediate_size", "shared_expert_gate"}) {
    const json x = a.contains("moe") ? a["moe"][k] : json(nullptr), y = b.contains("moe") ? b["moe"][k] : json(nullptr);
    if (x == y) continue;
    if (!out.empty()) out += "; ";
    out += "moe." + std::string(k) + " (checkpoint " + x.dump() + ", this run " + y.dump() + ")";
  }
  return out;
}

}  // namespace gptrain::checkpoint
