// GPT-NeoX / Pythia <-> GPTNeoXForCausalLM (docs/hf-mapping.md §2.3).
//   - query_key_value rows are interleaved per head, [h0: q,k,v | h1: q,k,v | ...] (Megatron's
//     [np, 3, hn]); gptrain's linear_qkv is [all Q | all K | all V]: rows are regrouped both ways.
//   - Partial rotary: rotary_pct of each head's dims, half-split pairs within that slice
//     (= gptrain rotary_percent with rotary_interleaved false: no permutation). A gptrain model
//     trained interleaved gets its q/k rotary rows permuted on export.
//   - use_parallel_residual true = gptrain two_norms; false = sequential (none).
//   - All linears have biases (attention_bias false is not representable: gptrain's MLP keeps
//     its biases when the attention's are on).
#include "core/hf/adapter_util.h"
#include "core/hf/config_sizes.h"
#include "core/hf/tensor_ops.h"

namespace gptrain::hf {
namespace {

using checkpoint::ModelDescription;
using nlohmann::json;

std::string neox_layer(int i) { return "gpt_neox.layers." + std::to_string(i) + "."; }

void require_neox_shape(const ModelConfig& c) {
  auto need = [](bool ok, const char* what) {
    if (!ok) fail("GPTNeoXForCausalLM cannot express this model: {}", what);
  };
  need(c.normalization == Normalization::LayerNorm, "normalization must be LayerNorm");
  need(c.position_embedding == PositionEmbedding::Rope, "position embeddings must be rope");
  need(!c.swiglu, "no SwiGLU");
  need(!c.squared_relu, "a GELU MLP, not --squared-relu");
  need(!c.geglu && !c.scale_embeddings_by_sqrt_hidden, "no GeGLU or embedding scaling (Gemma's)");
  need(c.add_bias_linear, "linear layers must have biases");
  need(!c.disable_bias_attention, "the attention projections must have biases (no --disable-bias-attention)");
  need(c.num_query_groups == c.num_attention_heads, "no grouped-query attention");
  need(c.kv_channels * c.num_attention_heads == c.hidden_size, "kv_channels * heads must equal hidden_size");
  need(c.parallel_residual != ParallelResidual::SharedNorm, "parallel residual must use two norms (or none)");
  need(!c.output_layer_bias, "no output-layer bias");
  need(!c.rope_scaling.llama3, "no Llama-3 RoPE scaling (--use-rope-scaling)");
  need(c.rope_scaling.seq_len_interpolation_factor == 1.0 && !c.rope_scaling.yarn,
       "no linear or YaRN RoPE scaling (--rotary-seq-len-interpolation-factor, --position-embedding-type yarn)");
  need(!c.qk_l2_norm, "no Q/K L2 norm (--qk-l2-norm)");
  need(c.window_size < 0, "no sliding-window attention (--window-size)");
}

// gptrain [Q | K | V] rows (3 * NH * HS, cols) <-> NeoX per-head [q, k, v] rows.
std::vector<float> qkv_to_neox(const std::vector<float>& x, int64_t NH, int64_t HS, int64_t cols) {
  std::vector<float> y(x.size());
  const int64_t blk = HS * cols;
  for (int64_t h = 0; h < NH; ++h)
    for (int64_t part = 0; part < 3; ++part)
      std::copy_n(x.begin() + (part * NH + h) * blk, blk, y.begin() + (h * 3 + part) * blk);
  return y;
}
std::vector<float> qkv_from_neox(const std::vector<float>& x, int64_t NH, int64_t HS, int64_t cols) {
  std::vector<float> y(x.size());
  const int64_t blk = HS * cols;
  for (int64_t h = 0; h < NH; ++h)
    for (int64_t part = 0; part < 3; ++part)
      std::copy_n(x.begin() + (h * 3 + part) * blk, blk, y.begin() + (part * NH + h) * blk);
  return y;
}

// rotary_pct such that Python's int(head_size * rotary_pct) == rd.
double rotary_pct_exact(int rd, int hs) {
  double p = static_cast<double>(rd) / hs;
  while (static_cast<int>(hs * p) < rd) p = std::nextafter(p, 2.0);
  return p;
}

class GptNeoxAdapter final : public Adapter {
 public:
  const char* family() const override { return "gpt_neox"; }
  const char* model_type() const override { return "gpt_neox"; }

  json hf_config(const ModelDescription& m) const override {
    const ModelConfig& c = m.config;
    require_neox_shape(c);
    const int rd = static_cast<int>(static_cast<float>(c.kv_channels) * c.rotary_percent);
    return json{
        {"architectures", {"GPTNeoXForCausalLM"}},
        {"model_type", "gpt_neox"},
        {"vocab_size", c.vocab_size},
        {"hidden_size", c.hidden_size},
        {"num_hidden_layers", c.num_layers},
        {"num_attention_heads", c.num_attention_heads},
        {"intermediate_size", c.ffn_hidden_size},
        {"hidden_act", c.gelu == GeluKind::Tanh ? "gelu_new" : "gelu"},
        // exact fraction: HF computes int(head_size * rotary_pct)
        {"rotary_pct", rotary_pct_exact(rd, c.kv_channels)},
        {"rotary_emb_base", c.rotary_base},
        {"max_position_embeddings", c.max_position_embeddings},
        {"layer_norm_eps", c.norm_epsilon},
        {"use_parallel_residual", c.parallel_residual == ParallelResidual::TwoNorms},
        {"attention_bias", true},
        {"rope_scaling", nullptr},
        {"attention_dropout", c.attention_dropout},
        {"hidden_dropout", c.hidden_dropout},
        {"initializer_range", c.init_method_std},
        {"tie_word_embeddings", c.tied_head()},
        {"use_cache", true},
        {"bos_token_id", 0},
        {"eos_token_id", c.vocab_size > 50256 ? 0 : c.vocab_size - 1},
    };
  }

  std::vector<OutTensor> to_hf(const ModelDescription& m, const TensorStore& ck) const override {
    const ModelConfig& c = m.config;
    require_neox_shape(c);
    const int64_t C = c.hidden_size, F = c.ffn_hidden_size, V = c.vocab_size, Vp = c.padded_vocab_size;
    const int64_t NH = c.num_attention_heads, HS = c.kv_channels;
    const int64_t rd = static_cast<int64_t>(static_cast<float>(HS) * c.rotary_percent);
    const bool inter = c.rotary_interleaved;
    OutList o{ck, {}};
    const TensorStore* s = &ck;
    o.add("gpt_neox.embed_in.weight", {V, C}, [s, V, Vp, C] {
      return take_rows(s->read_checked("embedding.word_embeddings.weight", {Vp, C}), V, C);
    });
    // q and k blocks of [Q|K|V] to half-split rotary (when trained interleaved), then per-head order.
    auto qkv = [=](const std::string& name, int64_t cols) {
      auto x = s->read_checked(name,
                               cols == 1 ? std::vector<int64_t>{3 * NH * HS} : std::vector<int64_t>{3 * NH * HS, cols});
      if (inter) {
        auto q = rope_interleaved_to_half(row_range(x, 0, NH * HS, cols), NH, HS, rd, cols);
        auto k = rope_interleaved_to_half(row_range(x, NH * HS, NH * HS, cols), NH, HS, rd, cols);
        x = concat({q, k, row_range(x, 2 * NH * HS, NH * HS, cols)});
      }
      return qkv_to_neox(x, NH, HS, cols);
    };
    for (int i = 0; i < c.num_layers; ++i) {
      o.copy(neox_layer(i) + "input_layernorm.weight", gptrain_layer(i) + "input_layernorm.weight", {C});
      o.copy(neox_layer(i) + "input_layernorm.bias", gptrain_layer(i) + "input_layernorm.bias", {C});
      o.copy(neox_layer(i) + "post_attention_layernorm.weight", gptrain_layer(i) + "pre_mlp_layernorm.weight", {C});
      o.copy(neox_layer(i) + "post_attention_layernorm.bias", gptrain_layer(i) + "pre_mlp_layernorm.bias", {C});
      const std::string w = gptrain_layer(i) + "self_attention.linear_qkv.weight",
                        b = gptrain_layer(i) + "self_attention.linear_qkv.bias";
      o.add(neox_layer(i) + "attention.query_key_value.weight", {3 * C, C}, [=] { return qkv(w, C); });
      o.add(neox_layer(i) + "attention.query_key_value.bias", {3 * C}, [=] { return qkv(b, 1); });
      o.copy(neox_layer(i) + "attention.dense.weight", gptrain_layer(i) + "self_attention.linear_proj.weight", {C, C});
      o.copy(neox_layer(i) + "attention.dense.bias", gptrain_layer(i) + "self_attention.linear_proj.bias", {C});
      o.copy(neox_layer(i) + "mlp.dense_h_to_4h.weight", gptrain_layer(i) + "mlp.linear_fc1.weight", {F, C});
      o.copy(neox_layer(i) + "mlp.dense_h_to_4h.bias", gptrain_layer(i) + "mlp.linear_fc1.bias", {F});
      o.copy(neox_layer(i) + "mlp.dense_4h_to_h.weight", gptrain_layer(i) + "mlp.linear_fc2.weight", {C, F});
      o.copy(neox_layer(i) + "mlp.dense_4h_to_h.bias", gptrain_layer(i) + "mlp.linear_fc2.bias", {C});
    }
    o.copy("gpt_neox.final_layer_norm.weight", "decoder.final_layernorm.weight", {C});
    o.copy("gpt_neox.final_layer_norm.bias", "decoder.final_layernorm.bias", {C});
    // Untied: embed_out. Tied (tie_word_embeddings true): transformers re-ties embed_out to embed_in.
    if (!c.tied_head())
      o.add("embed_out.weight", {V, C}, [s, V, Vp, C] {
        return take_rows(s->read_checked("output_layer.weight", {Vp, C}), V, C);
      });
    return std::move(o.out);
  }

  ModelDescription from_hf_config(const json& j, const std::string& where) const override {
    ModelDescription m;
    m.family = "gpt_neox";
    m.tokenizer_type = "HuggingFaceTokenizer";
    ModelConfig& c = m.config;
    c.num_layers = cfg_size(j, "num_hidden_layers", where, max_size::layers);
    c.hidden_size = cfg_size(j, "hidden_size", where, max_size::hidden);
    c.num_attention_heads = cfg_size(j, "num_attention_heads", where, max_size::heads);
    if (c.num_attention_heads <= 0 || c.hidden_size % c.num_attention_heads != 0)
      fail("{}: hidden_size {} must be divisible by num_attention_heads {}", where, c.hidden_size,
           c.num_attention_heads);
    c.num_query_groups = c.num_attention_heads;
    c.kv_channels = c.hidden_size / c.num_attention_heads;
    c.ffn_hidden_size = cfg_size(j, "intermediate_size", where, max_size::ffn);
    c.vocab_size = cfg_size(j, "vocab_size", where, max_size::vocab);
    c.max_position_embeddings = cfg_size(j, "max_position_embeddings", where, max_size::positions);
    c.seq_length = c.max_position_embeddings;
    c.normalization = Normalization::LayerNorm;
    c.norm_epsilon = cfg<float>(j, "layer_norm_eps", where, 1e-5f);
    c.position_embedding = PositionEmbedding::Rope;
    const double pct = cfg<double>(j, "rotary_pct", where, 0.25);
    c.rotary_percent = rotary_percent_for(static_cast<int>(c.kv_channels * pct), c.kv_channels);
    c.rotary_base = cfg<float>(j, "rotary_emb_base", where, 10000.0f);
    c.rotary_interleaved = false;  // NeoX rotates half-split within the rotary slice
    if (j.contains("rope_scaling") && !j["rope_scaling"].is_null())
      fail("{}: rope_scaling {} is not supported (gptrain implements plain RoPE)", where, j["rope_scaling"].dump());
    const std::string act = cfg<std::string>(j, "hidden_act", where, "gelu");
    if (act == "gelu")
      c.gelu = GeluKind::Erf;
    else if (act == "gelu_new" || act == "gelu_fast" || act == "gelu_pytorch_tanh")
      c.gelu = GeluKind::Tanh;
    else
      fail("{}: hidden_act \"{}\" is not supported (gelu, gelu_new, gelu_fast or gelu_pytorch_tanh)", where, act);
    if (!cfg<bool>(j, "attention_bias", where, true)) fail("{}: attention_bias false is not supported", where);
    c.add_bias_linear = true;
    c.parallel_residual =
        cfg<bool>(j, "use_parallel_residual", where, true) ? ParallelResidual::TwoNorms : ParallelResidual::None;
    c.untie_embeddings_and_output_weights = !cfg<bool>(j, "tie_word_embeddings", where, false);
    c.init_method_std = cfg<float>(j, "initializer_range", where, 0.02f);
    c.hidden_dropout = cfg<float>(j, "hidden_dropout", where, 0.0f);
    c.attention_dropout = cfg<float>(j, "attention_dropout", where, 0.0f);
    return m;
  }

  std::vector<OutTensor> from_hf(const ModelDescription& m, const TensorStore& hf) const override {
    const ModelConfig& c = m.config;
    const int64_t C = c.hidden_size, F = c.ffn_hidden_size, V = c.vocab_size, Vp = c.padded_vocab_size;
    const int64_t NH = c.num_attention_heads, HS = c.kv_channels;
    OutList o{hf, {}};
    const TensorStore* s = &hf;
    o.add("embedding.word_embeddings.weight", {Vp, C}, [s, V, Vp, C] {
      return s->read_checked_padded("gpt_neox.embed_in.weight", {V, C}, Vp);
    });
    for (int i = 0; i < c.num_layers; ++i) {
      o.copy(gptrain_layer(i) + "input_layernorm.weight", neox_layer(i) + "input_layernorm.weight", {C});
      o.copy(gptrain_layer(i) + "input_layernorm.bias", neox_layer(i) + "input_layernorm.bias", {C});
      const std::string w = neox_layer(i) + "attention.query_key_value.weight",
                        b = neox_layer(i) + "attention.query_key_value.bias";
      o.add(gptrain_layer(i) + "self_attention.linear_qkv.weight", {3 * C, C}, [=] {
        return qkv_from_neox(s->read_checked(w, {3 * C, C}), NH, HS, C);
      });
      o.add(gptrain_layer(i) + "self_attention.linear_qkv.bias", {3 * C},
            [=] { return qkv_from_neox(s->read_checked(b, {3 * C}), NH, HS, 1); });
      o.copy(gptrain_layer(i) + "self_attention.linear_proj.weight", neox_layer(i) + "attention.dense.weight", {C, C});
      o.copy(gptrain_layer(i) + "self_attention.linear_proj.bias", neox_layer(i) + "attention.dense.bias", {C});
      o.copy(gptrain_layer(i) + "pre_mlp_layernorm.weight", neox_layer(i) + "post_attention_layernorm.weight", {C});
      o.copy(gptrain_layer(i) + "pre_mlp_layernorm.bias", neox_layer(i) + "post_attention_layernorm.bias", {C});
      o.copy(gptrain_layer(i) + "mlp.linear_fc1.weight", neox_layer(i) + "mlp.dense_h_to_4h.weight", {F, C});
      o.copy(gptrain_layer(i) + "mlp.linear_fc1.bias", neox_layer(i) + "mlp.dense_h_to_4h.bias", {F});
      o.copy(gptrain_layer(i) + "mlp.linear_fc2.weight", neox_layer(i) + "mlp.dense_4h_to_h.weight", {C, F});
      o.copy(gptrain_layer(i) + "mlp.linear_fc2.bias", neox_layer(i) + "mlp.dense_4h_to_h.bias", {C});
    }
    o.copy("decoder.final_layernorm.weight", "gpt_neox.final_layer_norm.weight", {C});
    o.copy("decoder.final_layernorm.bias", "gpt_neox.final_layer_norm.bias", {C});
    if (!c.tied_head())
      o.add("output_layer.weight", {Vp, C}, [s, V, Vp, C] {
        return s->read_checked_padded("embed_out.weight", {V, C}, Vp);
      });
    return std::move(o.out);
  }

  bool ignorable_hf_tensor(const std::string& name, const ModelDescription& m) const override {
    return ends_with(name, ".attention.bias") || ends_with(name, ".attention.masked_bias") ||
           ends_with(name, ".rotary_emb.inv_freq") || (name == "embed_out.weight" && m.config.tied_head());
  }
};

}  // namespace

const Adapter& gpt_neox_adapter() {
  static const GptNeoxAdapter a;
  return a;
}

}  // namespace gptrain::hf
