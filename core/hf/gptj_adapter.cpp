// GPT-J <-> GPTJForCausalLM (docs/hf-mapping.md §2.4).
//   - One LayerNorm feeds attention and MLP in parallel: gptrain parallel_residual shared_norm.
//   - RoPE on the first rotary_dim dims of each head, interleaved pairs (rotate_every_two): gptrain
//     rotary_interleaved true, so imports need no permutation. A gptrain model trained half-split
//     gets its q/k rotary rows permuted to interleaved on export.
//   - q/k/v/out_proj have no biases, the MLP and lm_head do: gptrain's --disable-bias-attention
//     (disable_bias_attention), which imports set. Exports of other bias layouts: a model without
//     linear biases exports zero MLP biases; a model with attention biases folds what is foldable
//     exactly into fc_out.bias (out_proj bias, and W_out @ v bias since attention rows sum to 1),
//     drops k biases of the non-rotary dims (they add the same score to every key), and refuses
//     non-zero q biases or rotary-dim k biases (no exact HF form).
//   - HF GPT-J's rotary base is fixed at 10000.
#include "core/hf/adapter_util.h"
#include "core/hf/config_sizes.h"
#include "core/hf/tensor_ops.h"

#include <cmath>

namespace gptrain::hf {
namespace {

using checkpoint::ModelDescription;
using nlohmann::json;

std::string gptj_layer(int i) { return "transformer.h." + std::to_string(i) + "."; }

int rotary_dim_of(const ModelConfig& c) {
  return static_cast<int>(static_cast<float>(c.kv_channels) * c.rotary_percent);
}

void require_gptj_shape(const ModelConfig& c) {
  auto need = [](bool ok, const char* what) {
    if (!ok) fail("GPTJForCausalLM cannot express this model: {}", what);
  };
  need(c.normalization == Normalization::LayerNorm, "normalization must be LayerNorm");
  need(c.position_embedding == PositionEmbedding::Rope, "position embeddings must be rope");
  need(c.rotary_base == 10000.0f, "HF GPT-J's rotary base is fixed at 10000");
  need(!c.swiglu, "no SwiGLU");
  need(!c.squared_relu, "a GELU MLP, not --squared-relu");
  need(!c.geglu && !c.scale_embeddings_by_sqrt_hidden, "no GeGLU or embedding scaling (Gemma's)");
  need(c.num_query_groups == c.num_attention_heads, "no grouped-query attention");
  need(c.kv_channels * c.num_attention_heads == c.hidden_size, "kv_channels * heads must equal hidden_size");
  need(c.parallel_residual == ParallelResidual::SharedNorm, "parallel residual with one shared norm");
  need(c.window_size < 0, "no sliding-window attention (--window-size)");
  need(c.untie_embeddings_and_output_weights, "untied output layer");
  need(!c.rope_scaling.llama3, "no Llama-3 RoPE scaling (--use-rope-scaling)");
  need(c.rope_scaling.seq_len_interpolation_factor == 1.0 && !c.rope_scaling.yarn,
       "no linear or YaRN RoPE scaling (--rotary-seq-len-interpolation-factor, --position-embedding-type yarn)");
  need(!c.qk_l2_norm, "no Q/K L2 norm (--qk-l2-norm)");
}

class GptjAdapter final : public Adapter {
 public:
  const char* family() const override { return "gptj"; }
  const char* model_type() const override { return "gptj"; }

  json hf_config(const ModelDescription& m) const override {
    const ModelConfig& c = m.config;
    require_gptj_shape(c);
    const int special = c.vocab_size > 50256 ? 50256 : c.vocab_size - 1;
    return json{
        {"architectures", {"GPTJForCausalLM"}},
        {"model_type", "gptj"},
        {"vocab_size", c.vocab_size},
        {"n_positions", c.max_position_embeddings},
        {"n_embd", c.hidden_size},
        {"n_layer", c.num_layers},
        {"n_head", c.num_attention_heads},
        {"rotary_dim", rotary_dim_of(c)},
        {"n_inner", c.ffn_hidden_size == 4 * c.hidden_size ? json(nullptr) : json(c.ffn_hidden_size)},
        {"activation_function", c.gelu == GeluKind::Tanh ? "gelu_new" : "gelu"},
        {"layer_norm_epsilon", c.norm_epsilon},
        {"initializer_range", c.init_method_std},
        {"attn_pdrop", c.attention_dropout},
        {"embd_pdrop", c.hidden_dropout},
        {"resid_pdrop", c.hidden_dropout},
        {"tie_word_embeddings", false},
        {"use_cache", true},
        {"bos_token_id", special},
        {"eos_token_id", special},
    };
  }

  std::vector<OutTensor> to_hf(const ModelDescription& m, const TensorStore& ck) const override {
    const ModelConfig& c = m.config;
    require_gptj_shape(c);
    const int64_t C = c.hidden_size, F = c.ffn_hidden_size, V = c.vocab_size, Vp = c.padded_vocab_size;
    const int64_t NH = c.num_attention_heads, HS = c.kv_channels, rd = rotary_dim_of(c);
    const bool half = !c.rotary_interleaved;
    OutList o{ck, {}};
    const TensorStore* s = &ck;
    o.add("transformer.wte.weight", {V, C}, [s, V, Vp, C] {
      return take_rows(s->read_checked("embedding.word_embeddings.weight", {Vp, C}), V, C);
    });
    for (int i = 0; i < c.num_layers; ++i) {
      o.copy(gptj_layer(i) + "ln_1.weight", gptrain_layer(i) + "input_layernorm.weight", {C});
      o.copy(gptj_layer(i) + "ln_1.bias", gptrain_layer(i) + "input_layernorm.bias", {C});
      const std::string qkv_w = gptrain_layer(i) + "self_attention.linear_qkv.weight",
                        qkv_b = gptrain_layer(i) + "self_attention.linear_qkv.bias";
      const char* names[3] = {"q_proj", "k_proj", "v_proj"};
      for (int part = 0; part < 3; ++part)
        o.add(gptj_layer(i) + "attn." + names[part] + ".weight", {C, C}, [=] {
          auto rows = row_range(s->read_checked(qkv_w, {3 * C, C}), part * C, C, C);
          if (half && part < 2) rows = rope_half_to_interleaved(rows, NH, HS, rd, C);
          return rows;
        });
      o.copy(gptj_layer(i) + "attn.out_proj.weight", gptrain_layer(i) + "self_attention.linear_proj.weight", {C, C});
      o.copy(gptj_layer(i) + "mlp.fc_in.weight", gptrain_layer(i) + "mlp.linear_fc1.weight", {F, C});
      o.copy(gptj_layer(i) + "mlp.fc_out.weight", gptrain_layer(i) + "mlp.linear_fc2.weight", {C, F});
      // Without linear biases (--disable-bias-linear) HF's fc_in/fc_out biases are exact zeros.
      const bool mlp_bias = c.mlp_bias(), qkv_bias = c.qkv_bias(), proj_bias = c.proj_bias();
      if (mlp_bias)
        o.copy(gptj_layer(i) + "mlp.fc_in.bias", gptrain_layer(i) + "mlp.linear_fc1.bias", {F});
      else
        o.add(gptj_layer(i) + "mlp.fc_in.bias", {F},
              [F] { return std::vector<float>(static_cast<std::size_t>(F), 0.0f); });
      const std::string where = ck.where(), proj_w = gptrain_layer(i) + "self_attention.linear_proj.weight",
                        proj_b = gptrain_layer(i) + "self_attention.linear_proj.bias",
                        fc2_b = gptrain_layer(i) + "mlp.linear_fc2.bias";
      o.add(gptj_layer(i) + "mlp.fc_out.bias", {C}, [=] {
        auto out = mlp_bias ? s->read_checked(fc2_b, {C}) : std::vector<float>(static_cast<std::size_t>(C), 0.0f);
        if (proj_bias) {
          const auto pb = s->read_checked(proj_b, {C});
          for (int64_t r = 0; r < C; ++r)
            if (pb[r] != 0.0f) out[r] += pb[r];
        }
        if (!qkv_bias) return out;
        const auto qkvb = s->read_checked(qkv_b, {3 * C});
        for (int64_t h = 0; h < NH; ++h)
          for (int64_t d = 0; d < HS; ++d) {
            if (qkvb[h * HS + d] != 0.0f)
              fail(
                  "{}: layer {} has a non-zero query bias; GPT-J's q_proj has no bias and it cannot be folded exactly "
                  "(train GPT-J-style models with --disable-bias-attention to export them)",
                  where, i);
            if (d < rd && qkvb[C + h * HS + d] != 0.0f)
              fail("{}: layer {} has a non-zero key bias in the rotary dims; GPT-J's k_proj has no bias", where, i);
          }
        bool any_v = false;
        for (int64_t r = 0; r < C; ++r) any_v = any_v || qkvb[2 * C + r] != 0.0f;
        if (!any_v) return out;
        const auto pw = s->read_checked(proj_w, {C, C});
        for (int64_t r = 0; r < C; ++r) {
          double acc = 0.0;
          for (int64_t k = 0; k < C; ++k) acc += double(pw[r * C + k]) * qkvb[2 * C + k];
          out[r] = static_cast<float>(double(out[r]) + acc);
        }
        return out;
      });
    }
    o.copy("transformer.ln_f.weight", "decoder.final_layernorm.weight", {C});
    o.copy("transformer.ln_f.bias", "decoder.final_layernorm.bias", {C});
    o.add("lm_head.weight", {V, C}, [s, V, Vp, C] {
      return take_rows(s->read_checked("output_layer.weight", {Vp, C}), V, C);
    });
    if (c.output_layer_bias)
      o.add("lm_head.bias", {V}, [s, V, Vp] { return take_rows(s->read_checked("output_layer.bias", {Vp}), V, 1); });
    else
      o.add("lm_head.bias", {V}, [V] { return std::vector<float>(static_cast<std::size_t>(V), 0.0f); });
    return std::move(o.out);
  }

  ModelDescription from_hf_config(const json& j, const std::string& where) const override {
    ModelDescription m;
    m.family = "gptj";
    m.tokenizer_type = "GPT2BPETokenizer";
    ModelConfig& c = m.config;
    c.num_layers = cfg_size(j, "n_layer", where, max_size::layers);
    c.hidden_size = cfg_size(j, "n_embd", where, max_size::hidden);
    c.num_attention_heads = cfg_size(j, "n_head", where, max_size::heads);
    if (c.num_attention_heads <= 0 || c.hidden_size % c.num_attention_heads != 0)
      fail("{}: n_embd {} must be divisible by n_head {}", where, c.hidden_size, c.num_attention_heads);
    c.num_query_groups = c.num_attention_heads;
    c.kv_channels = c.hidden_size / c.num_attention_heads;
    c.ffn_hidden_size = cfg_size(j, "n_inner", where, max_size::ffn, 4 * c.hidden_size);
    c.vocab_size = cfg_size(j, "vocab_size", where, max_size::vocab);
    c.max_position_embeddings = cfg_size(j, "n_positions", where, max_size::positions);
    c.seq_length = c.max_position_embeddings;
    c.normalization = Normalization::LayerNorm;
    c.norm_epsilon = cfg<float>(j, "layer_norm_epsilon", where, 1e-5f);
    c.position_embedding = PositionEmbedding::Rope;
    const int rd = cfg_size(j, "rotary_dim", where, max_size::head_dim, c.kv_channels);
    if (rd <= 0 || rd > c.kv_channels || rd % 2 != 0)
      fail("{}: rotary_dim {} must be even and in (0, head_dim {}]", where, rd, c.kv_channels);
    c.rotary_percent = rotary_percent_for(rd, c.kv_channels);
    c.rotary_base = 10000.0f;
    c.rotary_interleaved = true;  // GPT-J rotates adjacent pairs: no permutation on import
    const std::string act = cfg<std::string>(j, "activation_function", where, "gelu_new");
    if (act == "gelu_new" || act == "gelu_fast" || act == "gelu_pytorch_tanh")
      c.gelu = GeluKind::Tanh;
    else if (act == "gelu")
      c.gelu = GeluKind::Erf;
    else
      fail("{}: activation_function \"{}\" is not supported (gelu_new, gelu_fast, gelu_pytorch_tanh or gelu)", where,
           act);
    c.add_bias_linear = true;         // fc_in / fc_out
    c.disable_bias_attention = true;  // no q/k/v/out_proj biases
    if (cfg<bool>(j, "tie_word_embeddings", where, false))
      fail("{}: tie_word_embeddings true is not supported for GPT-J", where);
    c.untie_embeddings_and_output_weights = true;
    c.output_layer_bias = true;
    c.parallel_residual = ParallelResidual::SharedNorm;
    c.init_method_std = cfg<float>(j, "initializer_range", where, 0.02f);
    c.hidden_dropout = cfg<float>(j, "resid_pdrop", where, 0.0f);
    c.attention_dropout = cfg<float>(j, "attn_pdrop", where, 0.0f);
    return m;
  }

  std::vector<OutTensor> from_hf(const ModelDescription& m, const TensorStore& hf) const override {
    const ModelConfig& c = m.config;
    const int64_t C = c.hidden_size, F = c.ffn_hidden_size, V = c.vocab_size, Vp = c.padded_vocab_size;
    OutList o{hf, {}};
    const TensorStore* s = &hf;
    o.add("embedding.word_embeddings.weight", {Vp, C}, [s, V, Vp, C] {
      return s->read_checked_padded("transformer.wte.weight", {V, C}, Vp);
    });
    for (int i = 0; i < c.num_layers; ++i) {
      const std::string a = gptj_layer(i) + "attn.";
      o.copy(gptrain_layer(i) + "input_layernorm.weight", gptj_layer(i) + "ln_1.weight", {C});
      o.copy(gptrain_layer(i) + "input_layernorm.bias", gptj_layer(i) + "ln_1.bias", {C});
      o.add(gptrain_layer(i) + "self_attention.linear_qkv.weight", {3 * C, C}, [=] {
        return concat({s->read_checked(a + "q_proj.weight", {C, C}), s->read_checked(a + "k_proj.weight", {C, C}),
                       s->read_checked(a + "v_proj.weight", {C, C})});
      });
      o.copy(gptrain_layer(i) + "self_attention.linear_proj.weight", a + "out_proj.weight", {C, C});
      o.copy(gptrain_layer(i) + "mlp.linear_fc1.weight", gptj_layer(i) + "mlp.fc_in.weight", {F, C});
      o.copy(gptrain_layer(i) + "mlp.linear_fc1.bias", gptj_layer(i) + "mlp.fc_in.bias", {F});
      o.copy(gptrain_layer(i) + "mlp.linear_fc2.weight", gptj_layer(i) + "mlp.fc_out.weight", {C, F});
      o.copy(gptrain_layer(i) + "mlp.linear_fc2.bias", gptj_layer(i) + "mlp.fc_out.bias", {C});
    }
    o.copy("decoder.final_layernorm.weight", "transformer.ln_f.weight", {C});
    o.copy("decoder.final_layernorm.bias", "transformer.ln_f.bias", {C});
    o.add("output_layer.weight", {Vp, C}, [s, V, Vp, C] {
      return s->read_checked_padded("lm_head.weight", {V, C}, Vp);
    });
    o.add("output_layer.bias", {Vp}, [s, V, Vp] { return s->read_checked_padded("lm_head.bias", {V}, Vp); });
    return std::move(o.out);
  }

  bool ignorable_hf_tensor(const std::string& name, const ModelDescription&) const override {
    return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") ||
           ends_with(name, ".attn.embed_positions");
  }
};

}  // namespace

const Adapter& gptj_adapter() {
  static const GptjAdapter a;
  return a;
}

}  // namespace gptrain::hf
