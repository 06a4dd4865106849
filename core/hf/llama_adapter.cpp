// Llama <-> LlamaForCausalLM (docs/hf-mapping.md §2.2).
//   - linear_qkv rows [Q heads | K groups | V groups] = q_proj ; k_proj ; v_proj (GQA: NKV groups).
//   - linear_fc1 rows [gate | up] = gate_proj ; up_proj; linear_fc2 = down_proj.
//   - RoPE: HF Llama rotates half-split pairs (j, j + d/2), which is gptrain's default
//     (rotary_interleaved false), so imports need no permutation and are saved half-split. A gptrain
//     model trained with --rotary-interleaved gets its q/k rows (and biases) permuted per head on
//     export (interleaved row 2j+c -> half-split row c*d/2+j), the function HF uses for Meta weights.
//   - rope_scaling: "llama3" (Llama-3.1 / 3.2) maps to ModelConfig::rope_scaling, read and written with
//     Hugging Face's four keys; "linear" to --rotary-seq-len-interpolation-factor (a whole factor, Megatron's
//     flag is an integer); "yarn" (factor, beta_fast, beta_slow) to --position-embedding-type yarn with
//     transformers 4.46's meaning: the original length is max_position_embeddings, the concentration factor
//     0.1 ln factor + 1 (Megatron's with --mscale 1 --mscale-all-dim 0). Every other type (dynamic,
//     longrope, ...) and any other key is refused by name, since each changes the frequencies.
//   - Biases: HF has attention_bias (q, k, v, o) and mlp_bias (gate, up, down); gptrain's
//     add_bias_linear covers both, --disable-bias-attention removes the attention ones, so every
//     combination but attention_bias without mlp_bias is representable.
#include <cmath>

#include <fmt/ranges.h>

#include "core/hf/config_sizes.h"
#include "core/hf/llama_layout.h"
#include "core/hf/tensor_ops.h"

namespace gptrain::hf {

using checkpoint::ModelDescription;
using nlohmann::json;

std::string hf_layer(int i) { return "model.layers." + std::to_string(i) + "."; }

void require_llama_shape(const ModelConfig& c, const char* architecture) {
  auto need = [&](bool ok, const char* what) {
    if (!ok) fail("{} cannot express this model: {}", architecture, what);
  };
  need(c.normalization == Normalization::RMSNorm, "normalization must be RMSNorm");
  need(c.position_embedding == PositionEmbedding::Rope, "position embeddings must be rope");
  need(c.rotary_percent >= 1.0f, "rotary_percent must be 1 (HF Llama rotates whole heads)");
  need(c.swiglu, "the MLP must be SwiGLU");
  need(!c.scale_embeddings_by_sqrt_hidden, "no embedding scaling (Gemma's)");
  need(c.parallel_residual == ParallelResidual::None, "no parallel residual");
  need(c.window_size < 0, "no sliding-window attention (--window-size; Mistral has it)");
  need(!c.output_layer_bias, "no output-layer bias");
  need(!c.qk_layernorm, "no per-head Q/K norms (--qk-layernorm: the qwen3 family has them)");
  need(!c.qk_l2_norm, "no Q/K L2 norm (--qk-l2-norm, Llama-4's: transformers 4.46 has no such model)");
  need(c.rope_scaling.seq_len_interpolation_factor == 1.0 && !c.rope_scaling.yarn,
       "no linear or YaRN RoPE scaling (--rotary-seq-len-interpolation-factor, --position-embedding-type yarn; "
       "only the llama family writes them)");
  need(!c.rope_scaling.llama3, "no Llama-3 RoPE scaling (--use-rope-scaling; only the llama family writes it)");
  need(!c.add_qkv_bias || c.add_bias_linear,
       "a qkv-only bias (--add-qkv-bias without linear biases) has no Llama equivalent");
}

json llama_hf_config(const ModelConfig& c) {
  return json{
      {"vocab_size", c.vocab_size},
      {"hidden_size", c.hidden_size},
      {"intermediate_size", c.ffn_hidden_size},
      {"num_hidden_layers", c.num_layers},
      {"num_attention_heads", c.num_attention_heads},
      {"num_key_value_heads", c.num_query_groups},
      {"head_dim", c.kv_channels},
      {"hidden_act", "silu"},
      {"max_position_embeddings", c.max_position_embeddings},
      {"rms_norm_eps", c.norm_epsilon},
      {"rope_theta", c.rotary_base},
      {"attention_dropout", c.attention_dropout},
      {"initializer_range", c.init_method_std},
      {"tie_word_embeddings", c.tied_head()},
      {"use_cache", true},
      {"bos_token_id", c.vocab_size > 50256 ? 50256 : 1},
      {"eos_token_id", c.vocab_size > 50256 ? 50256 : 2},
  };
}

void llama_to_hf_except_mlp(OutList& o, const ModelConfig& c) {
  const int64_t C = c.hidden_size, V = c.vocab_size, Vp = c.padded_vocab_size;
  const int64_t NH = c.num_attention_heads, NKV = c.num_query_groups, HS = c.kv_channels;
  const int64_t QKV = (NH + 2 * NKV) * HS;
  const bool inter = c.rotary_interleaved;
  const TensorStore* s = &o.src;
  o.add("model.embed_tokens.weight", {V, C}, [s, V, Vp, C] {
    return take_rows(s->read_checked("embedding.word_embeddings.weight", {Vp, C}), V, C);
  });
  for (int i = 0; i < c.num_layers; ++i) {
    o.copy(hf_layer(i) + "input_layernorm.weight", gptrain_layer(i) + "input_layernorm.weight", {C});
    // q, k, v rows out of the fused qkv; q/k permuted to half-split when trained interleaved.
    auto qkv_part = [=](const std::string& name, int64_t cols, int part) {
      const std::vector<int64_t> shape = cols == 1 ? std::vector<int64_t>{QKV} : std::vector<int64_t>{QKV, cols};
      const auto all = s->read_checked(name, shape);
      const int64_t first = part == 0 ? 0 : part == 1 ? NH * HS : (NH + NKV) * HS;
      const int64_t heads = part == 0 ? NH : NKV;
      auto rows = row_range(all, first, heads * HS, cols);
      if (inter && part < 2) rows = rope_interleaved_to_half(rows, heads, HS, HS, cols);
      return rows;
    };
    const std::string qkv_w = gptrain_layer(i) + "self_attention.linear_qkv.weight",
                      qkv_b = gptrain_layer(i) + "self_attention.linear_qkv.bias";
    const char* names[3] = {"q_proj", "k_proj", "v_proj"};
    for (int part = 0; part < 3; ++part) {
      const int64_t rows = (part == 0 ? NH : NKV) * HS;
      o.add(hf_layer(i) + "self_attn." + names[part] + ".weight", {rows, C}, [=] { return qkv_part(qkv_w, C, part); });
      if (c.qkv_bias())
        o.add(hf_layer(i) + "self_attn." + names[part] + ".bias", {rows}, [=] { return qkv_part(qkv_b, 1, part); });
    }
    o.copy(hf_layer(i) + "self_attn.o_proj.weight", gptrain_layer(i) + "self_attention.linear_proj.weight",
           {C, NH * HS});
    if (c.proj_bias())
      o.copy(hf_layer(i) + "self_attn.o_proj.bias", gptrain_layer(i) + "self_attention.linear_proj.bias", {C});
    o.copy(hf_layer(i) + "post_attention_layernorm.weight", gptrain_layer(i) + "pre_mlp_layernorm.weight", {C});
  }
  o.copy("model.norm.weight", "decoder.final_layernorm.weight", {C});
  if (!c.tied_head())
    o.add("lm_head.weight", {V, C}, [s, V, Vp, C] {
      return take_rows(s->read_checked("output_layer.weight", {Vp, C}), V, C);
    });
}

ModelDescription llama_from_hf_config(const json& j, const std::string& where) {
  ModelDescription m;
  m.tokenizer_type = "HuggingFaceTokenizer";
  ModelConfig& c = m.config;
  c.num_layers = cfg_size(j, "num_hidden_layers", where, max_size::layers);
  c.hidden_size = cfg_size(j, "hidden_size", where, max_size::hidden);
  c.num_attention_heads = cfg_size(j, "num_attention_heads", where, max_size::heads);
  c.num_query_groups = cfg_size(j, "num_key_value_heads", where, max_size::heads, c.num_attention_heads);
  if (c.num_attention_heads <= 0) fail("{}: num_attention_heads must be > 0", where);
  c.kv_channels = cfg_size(j, "head_dim", where, max_size::head_dim, c.hidden_size / c.num_attention_heads);
  c.ffn_hidden_size = cfg_size(j, "intermediate_size", where, max_size::ffn);
  c.vocab_size = cfg_size(j, "vocab_size", where, max_size::vocab);
  c.max_position_embeddings = cfg_size(j, "max_position_embeddings", where, max_size::positions);
  c.seq_length = c.max_position_embeddings;
  c.normalization = Normalization::RMSNorm;
  c.norm_epsilon = cfg<float>(j, "rms_norm_eps", where, 1e-6f);
  c.position_embedding = PositionEmbedding::Rope;
  c.rotary_percent = 1.0f;
  c.rotary_base = cfg<float>(j, "rope_theta", where, 10000.0f);
  c.rotary_interleaved = false;  // HF Llama is half-split: no permutation on import
  if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
    fail("{}: rope_scaling {} is not supported (gptrain implements plain RoPE)", where, j["rope_scaling"].dump());
  const std::string act = cfg<std::string>(j, "hidden_act", where, "silu");
  if (act != "silu") fail("{}: hidden_act \"{}\" is not supported (SwiGLU needs silu)", where, act);
  c.swiglu = true;
  c.untie_embeddings_and_output_weights = !cfg<bool>(j, "tie_word_embeddings", where, false);
  c.init_method_std = cfg<float>(j, "initializer_range", where, 0.02f);
  c.attention_dropout = cfg<float>(j, "attention_dropout", where, 0.0f);
  c.hidden_dropout = 0.0f;
  return m;
}

void llama_from_hf_except_mlp(OutList& o, const ModelConfig& c) {
  const int64_t C = c.hidden_size, V = c.vocab_size, Vp = c.padded_vocab_size;
  const int64_t NH = c.num_attention_heads, NKV = c.num_query_groups, HS = c.kv_channels;
  const TensorStore* s = &o.src;
  o.add("embedding.word_embeddings.weight", {Vp, C}, [s, V, Vp, C] {
    return s->read_checked_padded("model.embed_tokens.weight", {V, C}, Vp);
  });
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string a = hf_layer(i) + "self_attn.";
    o.copy(gptrain_layer(i) + "input_layernorm.weight", hf_layer(i) + "input_layernorm.weight", {C});
    o.add(gptrain_layer(i) + "self_attention.linear_qkv.weight", {(NH + 2 * NKV) * HS, C}, [=] {
      return concat({s->read_checked(a + "q_proj.weight", {NH * HS, C}),
                     s->read_checked(a + "k_proj.weight", {NKV * HS, C}),
                     s->read_checked(a + "v_proj.weight", {NKV * HS, C})});
    });
    if (c.qkv_bias())
      o.add(gptrain_layer(i) + "self_attention.linear_qkv.bias", {(NH + 2 * NKV) * HS}, [=] {
        return concat({s->read_checked(a + "q_proj.bias", {NH * HS}), s->read_checked(a + "k_proj.bias", {NKV * HS}),
                       s->read_checked(a + "v_proj.bias", {NKV * HS})});
      });
    o.copy(gptrain_layer(i) + "self_attention.linear_proj.weight", a + "o_proj.weight", {C, NH * HS});
    if (c.proj_bias()) o.copy(gptrain_layer(i) + "self_attention.linear_proj.bias", a + "o_proj.bias", {C});
    o.copy(gptrain_layer(i) + "pre_mlp_layernorm.weight", hf_layer(i) + "post_attention_layernorm.weight", {C});
  }
  o.copy("decoder.final_layernorm.weight", "model.norm.weight", {C});
  if (!c.tied_head())
    o.add("output_layer.weight", {Vp, C}, [s, V, Vp, C] {
      return s->read_checked_padded("lm_head.weight", {V, C}, Vp);
    });
}

bool llama_ignorable_hf_tensor(const std::string& name, const ModelConfig& c) {
  return ends_with(name, ".rotary_emb.inv_freq") || (name == "lm_head.weight" && c.tied_head());
}

void gated_mlp_to_hf(OutList& o, const std::string& hf, const std::string& ours, int64_t F, int64_t C, bool bias) {
  const TensorStore* s = &o.src;
  const std::string fc1_w = ours + "linear_fc1.weight", fc1_b = ours + "linear_fc1.bias";
  o.add(hf + "gate_proj.weight", {F, C}, [=] { return row_range(s->read_checked(fc1_w, {2 * F, C}), 0, F, C); });
  o.add(hf + "up_proj.weight", {F, C}, [=] { return row_range(s->read_checked(fc1_w, {2 * F, C}), F, F, C); });
  if (bias) {
    o.add(hf + "gate_proj.bias", {F}, [=] { return row_range(s->read_checked(fc1_b, {2 * F}), 0, F, 1); });
    o.add(hf + "up_proj.bias", {F}, [=] { return row_range(s->read_checked(fc1_b, {2 * F}), F, F, 1); });
  }
  o.copy(hf + "down_proj.weight", ours + "linear_fc2.weight", {C, F});
  if (bias) o.copy(hf + "down_proj.bias", ours + "linear_fc2.bias", {C});
}

void gated_mlp_from_hf(OutList& o, const std::string& hf, const std::string& ours, int64_t F, int64_t C, bool bias) {
  const TensorStore* s = &o.src;
  o.add(ours + "linear_fc1.weight", {2 * F, C}, [=] {
    return concat({s->read_checked(hf + "gate_proj.weight", {F, C}), s->read_checked(hf + "up_proj.weight", {F, C})});
  });
  if (bias)
    o.add(ours + "linear_fc1.bias", {2 * F}, [=] {
      return concat({s->read_checked(hf + "gate_proj.bias", {F}), s->read_checked(hf + "up_proj.bias", {F})});
    });
  o.copy(ours + "linear_fc2.weight", hf + "down_proj.weight", {C, F});
  if (bias) o.copy(ours + "linear_fc2.bias", hf + "down_proj.bias", {C});
}

std::vector<OutTensor> llama_dense_to_hf(const ModelConfig& c, const TensorStore& ck) {
  OutList o{ck, {}};
  llama_to_hf_except_mlp(o, c);
  for (int i = 0; i < c.num_layers; ++i)
    gated_mlp_to_hf(o, hf_layer(i) + "mlp.", gptrain_layer(i) + "mlp.", c.ffn_hidden_size, c.hidden_size, c.mlp_bias());
  return std::move(o.out);
}

std::vector<OutTensor> llama_dense_from_hf(const ModelConfig& c, const TensorStore& hf) {
  OutList o{hf, {}};
  llama_from_hf_except_mlp(o, c);
  for (int i = 0; i < c.num_layers; ++i)
    gated_mlp_from_hf(o, hf_layer(i) + "mlp.", gptrain_layer(i) + "mlp.", c.ffn_hidden_size, c.hidden_size,
                      c.mlp_bias());
  return std::move(o.out);
}

namespace {

// config.json's rope_scaling of a Llama: null, {"rope_type": "default"} (plain RoPE) or "llama3" with its four
// numbers, all required as transformers requires them. "type" is the older spelling of "rope_type".
RopeScaling llama_rope_scaling_from_hf(const json& j, const std::string& where) {
  RopeScaling s;
  if (!j.contains("rope_scaling") || j["rope_scaling"].is_null()) return s;
  const json& r = j["rope_scaling"];
  const std::string at = where + ": rope_scaling";
  if (!r.is_object()) fail("{} is {}, expected null or an object", at, r.dump());
  const std::string type =
      cfg<std::string>(r, r.contains("type") && !r.contains("rope_type") ? "type" : "rope_type", at);
  if (r.contains("rope_type") && r.contains("type") && r["type"] != r["rope_type"])
    fail("{}: \"type\" {} and \"rope_type\" {} disagree", at, r["type"].dump(), r["rope_type"].dump());
  if (type == "default") {
    for (auto it = r.begin(); it != r.end(); ++it)
      if (it.key() != "rope_type" && it.key() != "type")
        fail("{}: \"{}\" has no meaning for rope_type \"default\"", at, it.key());
    return s;
  }
  auto only_keys = [&](std::initializer_list<const char*> keys) {
    for (auto it = r.begin(); it != r.end(); ++it) {
      bool known = it.key() == "rope_type" || it.key() == "type";
      for (const char* k : keys) known = known || it.key() == k;
      if (!known)
        fail("{}: key \"{}\" is not supported with rope_type \"{}\" (it takes {})", at, it.key(), type,
             fmt::join(keys, ", "));
    }
  };
  if (type == "linear") {
    only_keys({"factor"});
    const double f = cfg<double>(r, "factor", at);
    if (!(f >= 1 && f == std::floor(f) && f < 1e9))
      fail(
          "{}: linear factor {} must be a whole number >= 1 (Megatron's --rotary-seq-len-interpolation-factor is "
          "an integer)",
          at, f);
    s.seq_len_interpolation_factor = f;
    return s;
  }
  if (type == "yarn") {
    only_keys({"factor", "beta_fast", "beta_slow"});
    s.yarn = true;
    s.yarn_factor = cfg<double>(r, "factor", at);
    s.yarn_beta_fast = cfg<double>(r, "beta_fast", at, 32.0);
    s.yarn_beta_slow = cfg<double>(r, "beta_slow", at, 1.0);
    s.yarn_original_max_positions = cfg<int>(j, "max_position_embeddings", where);
    if (!(s.yarn_factor > 0 && s.yarn_beta_fast > 0 && s.yarn_beta_slow > 0))
      fail("{}: factor, beta_fast and beta_slow must be > 0 (got {}, {}, {})", at, s.yarn_factor, s.yarn_beta_fast,
           s.yarn_beta_slow);
    return s;
  }
  if (type != "llama3")
    fail(
        "{}: rope_type \"{}\" is not supported (gptrain implements plain RoPE, \"llama3\", \"linear\" and "
        "\"yarn\")",
        at, type);
  for (auto it = r.begin(); it != r.end(); ++it)
    if (const std::string& key = it.key(); key != "rope_type" && key != "type" && key != "factor" &&
                                           key != "low_freq_factor" && key != "high_freq_factor" &&
                                           key != "original_max_position_embeddings")
      fail(
          "{}: key \"{}\" is not supported with rope_type \"llama3\" (it takes factor, low_freq_factor, "
          "high_freq_factor, original_max_position_embeddings)",
          at, key);
  s.llama3 = true;
  s.factor = cfg<double>(r, "factor", at);
  s.low_freq_factor = cfg<double>(r, "low_freq_factor", at);
  s.high_freq_factor = cfg<double>(r, "high_freq_factor", at);
  s.original_max_positions = cfg<int>(r, "original_max_position_embeddings", at);
  if (!(s.factor > 0)) fail("{}: factor must be > 0 (got {})", at, s.factor);
  if (!(s.low_freq_factor > 0 && s.low_freq_factor < s.high_freq_factor))
    fail("{}: needs 0 < low_freq_factor < high_freq_factor (got {} and {})", at, s.low_freq_factor, s.high_freq_factor);
  if (s.original_max_positions <= 0)
    fail("{}: original_max_position_embeddings must be > 0 (got {})", at, s.original_max_positions);
  return s;
}

json llama_rope_scaling_to_hf(const ModelConfig& c) {
  const RopeScaling& s = c.rope_scaling;
  auto need = [](bool ok, const char* what) {
    if (!ok) fail("LlamaForCausalLM cannot express this model: {}", what);
  };
  need(int(s.llama3) + int(s.yarn) + int(s.seq_len_interpolation_factor != 1.0) <= 1,
       "one RoPE scaling at a time (rope_scaling has one type)");
  if (s.seq_len_interpolation_factor != 1.0)
    return json{{"rope_type", "linear"}, {"factor", s.seq_len_interpolation_factor}};
  if (s.yarn) {
    need(s.yarn_original_max_positions == c.max_position_embeddings,
         "YaRN's original length must be max_position_embeddings (transformers 4.46 reads it from there)");
    need(s.yarn_round_to_int, "YaRN's correction range rounded to whole pairs (transformers 4.46 always rounds)");
    need(s.yarn_mscale == 1.0 && s.yarn_mscale_all_dim == 0.0,
         "YaRN's default concentration factor (--mscale 1 --mscale-all-dim 0: transformers' 0.1 ln factor + 1)");
    return json{{"rope_type", "yarn"},
                {"factor", s.yarn_factor},
                {"beta_fast", s.yarn_beta_fast},
                {"beta_slow", s.yarn_beta_slow}};
  }
  if (!s.llama3) return nullptr;
  return json{{"rope_type", "llama3"},
              {"factor", s.factor},
              {"low_freq_factor", s.low_freq_factor},
              {"high_freq_factor", s.high_freq_factor},
              {"original_max_position_embeddings", s.original_max_positions}};
}

// The model without its RoPE scaling: the Llama adapter writes the scaling itself, the families sharing
// require_llama_shape have none.
ModelConfig without_rope_scaling(const ModelConfig& c) {
  ModelConfig plain = c;
  plain.rope_scaling = RopeScaling{};
  return plain;
}

class LlamaAdapter final : public LlamaDenseAdapter {
 public:
  const char* family() const override { return "llama"; }
  const char* model_type() const override { return "llama"; }

  json hf_config(const ModelDescription& m) const override {
    const ModelConfig& c = m.config;
    require_llama_shape(without_rope_scaling(c), "LlamaForCausalLM");
    json j = llama_hf_config(c);
    j["architectures"] = {"LlamaForCausalLM"};
    j["model_type"] = "llama";
    j["rope_scaling"] = llama_rope_scaling_to_hf(c);
    j["attention_bias"] = c.qkv_bias();
    j["mlp_bias"] = c.mlp_bias();
    j["pretraining_tp"] = 1;
    return j;
  }

  std::vector<OutTensor> to_hf(const ModelDescription& m, const TensorStore& ck) const override {
    const ModelConfig& c = m.config;
    require_llama_shape(without_rope_scaling(c), "LlamaForCausalLM");
    llama_rope_scaling_to_hf(c);  // refuses what rope_scaling cannot say
    return llama_dense_to_hf(c, ck);
  }

  ModelDescription from_hf_config(const json& j, const std::string& where) const override {
    // The shared reader refuses any rope_scaling (Mixtral has none); Llama reads its own.
    json plain = j;
    plain.erase("rope_scaling");
    ModelDescription m = llama_from_hf_config(plain, where);
    m.family = "llama";
    ModelConfig& c = m.config;
    c.rope_scaling = llama_rope_scaling_from_hf(j, where);
    if (cfg<int>(j, "pretraining_tp", where, 1) != 1) fail("{}: pretraining_tp != 1 is not supported", where);
    const bool attn_bias = cfg<bool>(j, "attention_bias", where, false),
               mlp_bias = cfg<bool>(j, "mlp_bias", where, false);
    if (attn_bias && !mlp_bias)
      fail(
          "{}: attention_bias true with mlp_bias false is not supported (gptrain can drop the attention biases "
          "alone, --disable-bias-attention, but not the MLP ones alone)",
          where);
    c.add_bias_linear = mlp_bias;
    c.disable_bias_attention = mlp_bias && !attn_bias;
    return m;
  }
};

}  // namespace

const Adapter& llama_adapter() {
  static const LlamaAdapter a;
  return a;
}

}  // namespace gptrain::hf
