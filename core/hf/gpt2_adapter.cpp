// GPT-2 <-> GPT2LMHeadModel (docs/hf-mapping.md §2.1).
//   - HF's Conv1D stores weights (in, out): c_attn, attn.c_proj, c_fc, mlp.c_proj are the transposes
//     of gptrain's (out, in) linear weights.
//   - c_attn columns are [Q | K | V] with heads contiguous in each block: exactly gptrain's
//     linear_qkv rows, so the transpose is the only change (no per-head reordering).
//   - Word embeddings: gptrain pads rows to padded_vocab_size; HF has vocab_size rows.
//   - Tied head: lm_head.weight is the embedding and is not stored (save_pretrained drops it).
//   - GELU: gptrain tanh = HF "gelu_new" (also "gelu_pytorch_tanh", "gelu_fast" read as tanh);
//     erf = HF "gelu"; --squared-relu = HF "relu2".
#include "core/common/error.h"
#include "core/hf/adapter.h"
#include "core/hf/adapter_util.h"
#include "core/hf/config_sizes.h"
#include "core/hf/tensor_ops.h"

namespace gptrain::hf {
namespace {

using checkpoint::ModelDescription;
using nlohmann::json;

std::string gpt2_layer(int i) { return "transformer.h." + std::to_string(i) + "."; }

void require_gpt2_shape(const ModelConfig& c) {
  auto need = [](bool ok, const char* what) {
    if (!ok) fail("GPT2LMHeadModel cannot express this model: {} (convert it as another family)", what);
  };
  need(c.normalization == Normalization::LayerNorm, "normalization must be LayerNorm");
  need(c.position_embedding == PositionEmbedding::LearnedAbsolute, "position embeddings must be learned_absolute");
  need(!c.swiglu, "no SwiGLU");
  need(!c.geglu && !c.scale_embeddings_by_sqrt_hidden, "no GeGLU or embedding scaling (Gemma's)");
  need(c.add_bias_linear, "linear layers must have biases");
  need(!c.disable_bias_attention, "the attention projections must have biases (no --disable-bias-attention)");
  need(c.num_query_groups == c.num_attention_heads, "no grouped-query attention");
  need(c.kv_channels * c.num_attention_heads == c.hidden_size, "kv_channels * heads must equal hidden_size");
  need(c.parallel_residual == ParallelResidual::None, "no parallel residual");
  need(!c.output_layer_bias, "no output-layer bias");
  need(c.window_size < 0, "no sliding-window attention (--window-size)");
}

class Gpt2Adapter final : public Adapter {
 public:
  const char* family() const override { return "gpt2"; }
  const char* model_type() const override { return "gpt2"; }

  json hf_config(const ModelDescription& m) const override {
    const ModelConfig& c = m.config;
    require_gpt2_shape(c);
    const int special = c.vocab_size > 50256 ? 50256 : c.vocab_size - 1;  // <|endoftext|> for the GPT-2 vocabulary
    return json{
        {"architectures", {"GPT2LMHeadModel"}},
        {"model_type", "gpt2"},
        {"vocab_size", c.vocab_size},
        {"n_positions", c.max_position_embeddings},
        {"n_ctx", c.max_position_embeddings},
        {"n_embd", c.hidden_size},
        {"n_layer", c.num_layers},
        {"n_head", c.num_attention_heads},
        {"n_inner", c.ffn_hidden_size == 4 * c.hidden_size ? json(nullptr) : json(c.ffn_hidden_size)},
        {"activation_function", c.squared_relu             ? "relu2"
                                : c.gelu == GeluKind::Tanh ? "gelu_new"
                                                           : "gelu"},
        {"layer_norm_epsilon", c.norm_epsilon},
        {"initializer_range", c.init_method_std},
        {"attn_pdrop", c.attention_dropout},
        {"embd_pdrop", c.hidden_dropout},
        {"resid_pdrop", c.hidden_dropout},
        {"summary_activation", nullptr},
        {"summary_first_dropout", 0.1},
        {"summary_proj_to_labels", true},
        {"summary_type", "cls_index"},
        {"summary_use_proj", true},
        {"scale_attn_weights", true},
        {"scale_attn_by_inverse_layer_idx", false},
        {"reorder_and_upcast_attn", false},
        {"use_cache", true},
        {"tie_word_embeddings", c.tied_head()},
        {"bos_token_id", special},
        {"eos_token_id", special},
    };
  }

  std::vector<OutTensor> to_hf(const ModelDescription& m, const TensorStore& ck) const override {
    const ModelConfig& c = m.config;
    require_gpt2_shape(c);
    const int64_t C = c.hidden_size, F = c.ffn_hidden_size, V = c.vocab_size, Vp = c.padded_vocab_size;
    std::vector<OutTensor> out;
    auto copy = [&](std::string hf, std::string g, std::vector<int64_t> shape) {
      out.push_back({std::move(hf), shape, [&ck, g, shape] { return ck.read_checked(g, shape); }});
    };
    // Conv1D: HF (in, out) = transpose of gptrain (out, in).
    auto conv = [&](std::string hf, std::string g, int64_t o, int64_t i) {
      out.push_back({std::move(hf), {i, o}, [&ck, g, o, i] { return transpose(ck.read_checked(g, {o, i}), o, i); }});
    };
    out.push_back({"transformer.wte.weight", {V, C}, [&ck, V, Vp, C] {
                     return take_rows(ck.read_checked("embedding.word_embeddings.weight", {Vp, C}), V, C);
                   }});
    copy("transformer.wpe.weight", "embedding.position_embeddings.weight", {c.max_position_embeddings, C});
    for (int i = 0; i < c.num_layers; ++i) {
      copy(gpt2_layer(i) + "ln_1.weight", gptrain_layer(i) + "input_layernorm.weight", {C});
      copy(gpt2_layer(i) + "ln_1.bias", gptrain_layer(i) + "input_layernorm.bias", {C});
      conv(gpt2_layer(i) + "attn.c_attn.weight", gptrain_layer(i) + "self_attention.linear_qkv.weight", 3 * C, C);
      copy(gpt2_layer(i) + "attn.c_attn.bias", gptrain_layer(i) + "self_attention.linear_qkv.bias", {3 * C});
      conv(gpt2_layer(i) + "attn.c_proj.weight", gptrain_layer(i) + "self_attention.linear_proj.weight", C, C);
      copy(gpt2_layer(i) + "attn.c_proj.bias", gptrain_layer(i) + "self_attention.linear_proj.bias", {C});
      copy(gpt2_layer(i) + "ln_2.weight", gptrain_layer(i) + "pre_mlp_layernorm.weight", {C});
      copy(gpt2_layer(i) + "ln_2.bias", gptrain_layer(i) + "pre_mlp_layernorm.bias", {C});
      conv(gpt2_layer(i) + "mlp.c_fc.weight", gptrain_layer(i) + "mlp.linear_fc1.weight", F, C);
      copy(gpt2_layer(i) + "mlp.c_fc.bias", gptrain_layer(i) + "mlp.linear_fc1.bias", {F});
      conv(gpt2_layer(i) + "mlp.c_proj.weight", gptrain_layer(i) + "mlp.linear_fc2.weight", C, F);
      copy(gpt2_layer(i) + "mlp.c_proj.bias", gptrain_layer(i) + "mlp.linear_fc2.bias", {C});
    }
    copy("transformer.ln_f.weight", "decoder.final_layernorm.weight", {C});
    copy("transformer.ln_f.bias", "decoder.final_layernorm.bias", {C});
    if (!c.tied_head())
      out.push_back({"lm_head.weight", {V, C}, [&ck, V, Vp, C] {
                       return take_rows(ck.read_checked("output_layer.weight", {Vp, C}), V, C);
                     }});
    return out;
  }

  ModelDescription from_hf_config(const json& j, const std::string& where) const override {
    ModelDescription m;
    m.family = "gpt2";
    m.tokenizer_type = "GPT2BPETokenizer";
    ModelConfig& c = m.config;
    c.num_layers = cfg_size(j, "n_layer", where, max_size::layers);
    c.hidden_size = cfg_size(j, "n_embd", where, max_size::hidden);
    c.num_attention_heads = cfg_size(j, "n_head", where, max_size::heads);
    c.num_query_groups = c.num_attention_heads;
    if (c.num_attention_heads <= 0 || c.hidden_size % c.num_attention_heads != 0)
      fail("{}: n_embd {} must be divisible by n_head {}", where, c.hidden_size, c.num_attention_heads);
    c.kv_channels = c.hidden_size / c.num_attention_heads;
    c.ffn_hidden_size = cfg_size(j, "n_inner", where, max_size::ffn, 4 * c.hidden_size);
    c.vocab_size = cfg_size(j, "vocab_size", where, max_size::vocab);
    c.max_position_embeddings = cfg_size(j, "n_positions", where, max_size::positions);
    c.seq_length = c.max_position_embeddings;
    c.normalization = Normalization::LayerNorm;
    c.norm_epsilon = cfg<float>(j, "layer_norm_epsilon", where, 1e-5f);
    c.position_embedding = PositionEmbedding::LearnedAbsolute;
    const std::string act = cfg<std::string>(j, "activation_function", where, "gelu_new");
    if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast")
      c.gelu = GeluKind::Tanh;
    else if (act == "gelu")
      c.gelu = GeluKind::Erf;
    else if (act == "relu2")  // relu(x)^2: Megatron's --squared-relu
      c.squared_relu = true;
    else
      fail("{}: activation_function \"{}\" is not supported (gelu_new, gelu_pytorch_tanh, gelu_fast, gelu or relu2)",
           where, act);
    if (!cfg<bool>(j, "scale_attn_weights", where, true)) fail("{}: scale_attn_weights false is not supported", where);
    if (cfg<bool>(j, "scale_attn_by_inverse_layer_idx", where, false))
      fail("{}: scale_attn_by_inverse_layer_idx is not supported", where);
    c.add_bias_linear = true;
    c.untie_embeddings_and_output_weights = !cfg<bool>(j, "tie_word_embeddings", where, true);
    c.init_method_std = cfg<float>(j, "initializer_range", where, 0.02f);
    c.hidden_dropout = cfg<float>(j, "resid_pdrop", where, 0.1f);
    c.attention_dropout = cfg<float>(j, "attn_pdrop", where, 0.1f);
    return m;
  }

  std::vector<OutTensor> from_hf(const ModelDescription& m, const TensorStore& hf) const override {
    const ModelConfig& c = m.config;
    const int64_t C = c.hidden_size, F = c.ffn_hidden_size, V = c.vocab_size, Vp = c.padded_vocab_size;
    // openai-community/gpt2 stores the base model without the "transformer." prefix.
    const std::string p = hf.has("transformer.wte.weight") ? "transformer." : "";
    auto h = [&](int i) { return p + "h." + std::to_string(i) + "."; };
    std::vector<OutTensor> out;
    auto copy = [&](std::string g, std::string name, std::vector<int64_t> shape) {
      out.push_back({std::move(g), shape, [&hf, name, shape] { return hf.read_checked(name, shape); }});
    };
    auto conv = [&](std::string g, std::string name, int64_t o, int64_t i) {
      out.push_back({std::move(g), {o, i}, [&hf, name, o, i] {
                       return transpose(hf.read_checked(name, {i, o}), i, o);
                     }});
    };
    out.push_back({"embedding.word_embeddings.weight", {Vp, C}, [&hf, p, V, Vp, C] {
                     return hf.read_checked_padded(p + "wte.weight", {V, C}, Vp);
                   }});
    copy("embedding.position_embeddings.weight", p + "wpe.weight", {c.max_position_embeddings, C});
    for (int i = 0; i < c.num_layers; ++i) {
      copy(gptrain_layer(i) + "input_layernorm.weight", h(i) + "ln_1.weight", {C});
      copy(gptrain_layer(i) + "input_layernorm.bias", h(i) + "ln_1.bias", {C});
      conv(gptrain_layer(i) + "self_attention.linear_qkv.weight", h(i) + "attn.c_attn.weight", 3 * C, C);
      copy(gptrain_layer(i) + "self_attention.linear_qkv.bias", h(i) + "attn.c_attn.bias", {3 * C});
      conv(gptrain_layer(i) + "self_attention.linear_proj.weight", h(i) + "attn.c_proj.weight", C, C);
      copy(gptrain_layer(i) + "self_attention.linear_proj.bias", h(i) + "attn.c_proj.bias", {C});
      copy(gptrain_layer(i) + "pre_mlp_layernorm.weight", h(i) + "ln_2.weight", {C});
      copy(gptrain_layer(i) + "pre_mlp_layernorm.bias", h(i) + "ln_2.bias", {C});
      conv(gptrain_layer(i) + "mlp.linear_fc1.weight", h(i) + "mlp.c_fc.weight", F, C);
      copy(gptrain_layer(i) + "mlp.linear_fc1.bias", h(i) + "mlp.c_fc.bias", {F});
      conv(gptrain_layer(i) + "mlp.linear_fc2.weight", h(i) + "mlp.c_proj.weight", C, F);
      copy(gptrain_layer(i) + "mlp.linear_fc2.bias", h(i) + "mlp.c_proj.bias", {C});
    }
    copy("decoder.final_layernorm.weight", p + "ln_f.weight", {C});
    copy("decoder.final_layernorm.bias", p + "ln_f.bias", {C});
    if (!c.tied_head())
      out.push_back({"output_layer.weight", {Vp, C}, [&hf, V, Vp, C] {
                       return hf.read_checked_padded("lm_head.weight", {V, C}, Vp);
                     }});
    return out;
  }

  bool ignorable_hf_tensor(const std::string& name, const ModelDescription& m) const override {
    auto ends_with = [&](const char* s) {
      const std::string suf = s;
      return name.size() >= suf.size() && name.compare(name.size() - suf.size(), suf.size(), suf) == 0;
    };
    // Causal-mask buffers written by old transformers versions; the tied head.
    return ends_with(".attn.bias") || ends_with(".attn.masked_bias") ||
           (name == "lm_head.weight" && m.config.tied_head());
  }
};

}  // namespace

const Adapter& gpt2_adapter() {
  static const Gpt2Adapter a;
  return a;
}

}  // namespace gptrain::hf
