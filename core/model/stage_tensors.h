// The parameter tensors of a GPT stage, listed once.
//
// Each part of a stage (the embedding, a transformer layer, the final norm + output layer) is a struct of
// pointers templated on the pointer type, bound twice: to the weights (`const void*`, compute dtype, what
// forward reads) and to the fp32 gradients (`float*`). The for_each_*_tensor functions below are the one
// list of a part's tensors: for every tensor the configuration has, in parameter-layout order, they call
// bind(spec, member) with the tensor's spec (checkpoint name, global shape, this rank's shard, init, weight
// decay: a ParamTensor without its offset) and the member that points at it. build_param_layout, GptStage's
// wiring and its gradient groups all iterate these lists, so a new weight is a member and one list entry.
//
// Two members may bind the same tensor (same name): the tied output layer binds the word embeddings, and
// GPT-J's shared norm binds the MLP's norm to the input norm. The layout holds such a tensor once.
#pragma once

#include "core/model/model_config.h"
#include "core/model/param_layout.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gptrain {

template <class P>
struct NormTensors {
  P w = nullptr;  // (C) gamma (gamma - 1 with --apply-layernorm-1p)
  P b = nullptr;  // (C) beta; null for RMSNorm
};

// An MoE MLP's tensors (moe_layer.cpp); null in a dense layer. The experts are this rank's E_local.
template <class P>
struct MoeTensors {
  P router_w = nullptr;       // (E, C)
  P fc1_w = nullptr;          // (E_local, FE1, C), rows [gate | up] with swiglu
  P fc2_w = nullptr;          // (E_local, C, FE)
  P shared_fc1_w = nullptr;   // (FS1, C) or null
  P shared_fc2_w = nullptr;   // (C, FS) or null
  P shared_gate_w = nullptr;  // (1, C) with --moe-shared-expert-gate, or null
};

template <class P>
struct LayerTensors {
  NormTensors<P> ln1;  // input norm
  NormTensors<P> ln2;  // pre-MLP norm (the input norm's tensors with shared_norm)
  P qkv_w = nullptr;   // (QKV, C) rows [Q heads | K groups | V groups]
  P qkv_b = nullptr;   // (QKV) or null
  P q_ln_w = nullptr;  // (HS) per-head query norm weight (--qk-layernorm), shared by the heads
  P k_ln_w = nullptr;  // (HS) per-head key norm weight
  P proj_w = nullptr;  // (C, ATT)
  P proj_b = nullptr;  // (C) or null
  P fc1_w = nullptr;   // (F1, C) rows [gate | up] with swiglu / geglu
  P fc1_b = nullptr;   // (F1) or null
  P fc2_w = nullptr;   // (C, F)
  P fc2_b = nullptr;   // (C) or null
  MoeTensors<P> moe;   // MoE layers instead of fc1/fc2
};

template <class P>
struct EmbeddingTensors {
  P wte = nullptr;  // (V, C) this rank's vocabulary rows
  P wpe = nullptr;  // (P, C) learned positions, or null
};

template <class P>
struct HeadTensors {
  NormTensors<P> lnf;  // final norm
  P out_w = nullptr;   // (V, C): output_layer.weight, or the word embeddings when tied
  P out_b = nullptr;   // (V) or null
};

template <class P>
struct StageTensors {
  EmbeddingTensors<P> embedding;        // first stage
  std::vector<LayerTensors<P>> layers;  // local layers [layer_first, layer_last)
  HeadTensors<P> head;                  // last stage
};

// Builds the specs of a finalized config's tensors: global shapes from the config, this rank's shard from
// its LocalSizes (TP blocks only with TP, expert blocks only with EP), Megatron's init.
class TensorSpecs {
 public:
  explicit TensorSpecs(const StageConfig& c);
  const StageConfig& config() const { return c_; }
  const LocalSizes& sizes() const { return s_; }

  // ScaledNormal: std / sqrt(2 L), the residual outputs; Embedding: the word and position tables
  // (--embedding-init-method-std).
  enum class Init : uint8_t { Normal, ScaledNormal, Embedding };
  // A weight matrix or table: weight-decayed, normal init.
  ParamTensor weight(std::string name, std::vector<int64_t> shape, std::vector<ShardBlock> shard,
                     Init init = Init::Normal) const;
  // The E routed experts' weights stacked along dim 0, (E, out, in): this rank's experts with expert
  // parallelism, whose gradients are reduced over the ranks holding the same experts (ParamTensor::expert),
  // and its share of each expert's ffn width with expert tensor parallelism (`ffn`: the fc1 rows or fc2
  // columns, whose dim and global extent give the shape).
  struct ExpertFfnSplit {
    int dim;  // 1: fc1 (E, FE1, C); 2: fc2 (E, C, FE)
    std::vector<ShardBlock> blocks;
  };
  ParamTensor expert_weight(std::string name, const ExpertFfnSplit& ffn, Init init = Init::Normal) const;
  ExpertFfnSplit expert_fc1_rows() const;  // this rank's rows of both halves with a gated MLP
  ExpertFfnSplit expert_fc2_cols() const;
  // A bias: no decay, zeros.
  ParamTensor bias(std::string name, int64_t n, std::vector<ShardBlock> shard = {}) const;
  // A norm's weight (and bias with LayerNorm) under `prefix` ("decoder.final_layernorm").
  template <class P, class Bind>
  void norm(const std::string& prefix, NormTensors<P>& m, Bind& bind) const;
  // A per-head norm's (HS) weight (--qk-layernorm): whole on every TP rank, though each rank's heads
  // give only part of its gradient (summed over TP, parallel/pipeline/distributed_gpt.cpp).
  ParamTensor head_norm_weight(std::string name) const;

  // This rank's blocks of a TP-split tensor (empty without TP): dim-0 blocks unless named columns.
  std::vector<ShardBlock> qkv_rows() const;        // its heads of each of [Q | K | V]
  std::vector<ShardBlock> attention_cols() const;  // its heads' columns of the output projection
  std::vector<ShardBlock> ffn_rows() const;        // its fc1 rows (of both halves with swiglu)
  std::vector<ShardBlock> ffn_cols() const;        // its fc2 columns
  std::vector<ShardBlock> vocab_rows() const;      // its padded-vocabulary rows

 private:
  ParamTensor norm_weight(std::string name) const;
  const StageConfig& c_;
  LocalSizes s_;
};

// ---- the lists ----

template <class P, class Bind>
void for_each_embedding_tensor(const TensorSpecs& t, EmbeddingTensors<P>& m, Bind&& bind) {
  const StageConfig& c = t.config();
  const int64_t C = c.hidden_size;
  bind(t.weight("embedding.word_embeddings.weight", {c.padded_vocab_size, C}, t.vocab_rows(),
                TensorSpecs::Init::Embedding),
       m.wte);
  if (c.position_embedding == PositionEmbedding::LearnedAbsolute)
    bind(t.weight("embedding.position_embeddings.weight", {c.max_position_embeddings, C}, {},
                  TensorSpecs::Init::Embedding),
         m.wpe);
}

// The MoE MLP of a layer (moe_layer.cpp): the router, the E experts' weights stacked along dim 0, and the
// optional shared expert. No biases (ModelConfig::check_moe).
template <class P, class Bind>
void for_each_moe_tensor(const TensorSpecs& t, const std::string& prefix, MoeTensors<P>& m, Bind&& bind) {
  const LocalSizes& s = t.sizes();
  const int64_t C = t.config().hidden_size;
  using Init = TensorSpecs::Init;
  bind(t.weight(prefix + "router.weight", {s.E, C}, {}), m.router_w);
  bind(t.expert_weight(prefix + "experts.linear_fc1.weight", t.expert_fc1_rows()), m.fc1_w);
  bind(t.expert_weight(prefix + "experts.linear_fc2.weight", t.expert_fc2_cols(), Init::ScaledNormal), m.fc2_w);
  if (s.FS > 0) {
    bind(t.weight(prefix + "shared_experts.linear_fc1.weight", {s.FS1, C}, {}), m.shared_fc1_w);
    bind(t.weight(prefix + "shared_experts.linear_fc2.weight", {C, s.FS}, {}, Init::ScaledNormal), m.shared_fc2_w);
    if (t.config().moe.shared_expert_gate)
      bind(t.weight(prefix + "shared_experts.gate_weight", {1, C}, {}), m.shared_gate_w);
  }
}

// Global layer `layer`'s tensors, under "decoder.layers.<layer>.".
template <class P, class Bind>
void for_each_layer_tensor(const TensorSpecs& t, int layer, LayerTensors<P>& m, Bind&& bind) {
  const StageConfig& c = t.config();
  const int64_t C = c.hidden_size, NH = c.num_attention_heads, NKV = c.num_query_groups, HS = c.kv_channels;
  const int64_t QKV = (NH + 2 * NKV) * HS, F = c.ffn_hidden_size, F1 = c.gated_mlp() ? 2 * F : F;
  using Init = TensorSpecs::Init;
  const std::string p = "decoder.layers." + std::to_string(layer) + ".";
  t.norm(p + "input_layernorm", m.ln1, bind);
  bind(t.weight(p + "self_attention.linear_qkv.weight", {QKV, C}, t.qkv_rows()), m.qkv_w);
  if (c.qkv_bias()) bind(t.bias(p + "self_attention.linear_qkv.bias", QKV, t.qkv_rows()), m.qkv_b);
  if (c.qk_layernorm) {
    bind(t.head_norm_weight(p + "self_attention.q_layernorm.weight"), m.q_ln_w);
    bind(t.head_norm_weight(p + "self_attention.k_layernorm.weight"), m.k_ln_w);
  }
  bind(t.weight(p + "self_attention.linear_proj.weight", {C, NH * HS}, t.attention_cols(), Init::ScaledNormal),
       m.proj_w);
  if (c.proj_bias()) bind(t.bias(p + "self_attention.linear_proj.bias", C), m.proj_b);
  const bool shared_norm = c.parallel_residual == ParallelResidual::SharedNorm;
  t.norm(p + (shared_norm ? "input_layernorm" : "pre_mlp_layernorm"), m.ln2, bind);
  if (c.moe.is_moe_layer(layer)) {
    for_each_moe_tensor(t, p + "mlp.", m.moe, bind);
    return;
  }
  bind(t.weight(p + "mlp.linear_fc1.weight", {F1, C}, t.ffn_rows()), m.fc1_w);
  if (c.mlp_bias()) bind(t.bias(p + "mlp.linear_fc1.bias", F1, t.ffn_rows()), m.fc1_b);
  bind(t.weight(p + "mlp.linear_fc2.weight", {C, F}, t.ffn_cols(), Init::ScaledNormal), m.fc2_w);
  if (c.mlp_bias()) bind(t.bias(p + "mlp.linear_fc2.bias", C), m.fc2_b);
}

// The final norm and the output layer. Tied to the word embeddings, the output layer binds them; on a
// stage without the embedding it holds a copy (tied_copy) whose gradient is summed with the owner's.
template <class P, class Bind>
void for_each_head_tensor(const TensorSpecs& t, HeadTensors<P>& m, Bind&& bind) {
  const StageConfig& c = t.config();
  t.norm("decoder.final_layernorm", m.lnf, bind);
  if (c.untie_embeddings_and_output_weights) {
    bind(t.weight("output_layer.weight", {c.padded_vocab_size, c.hidden_size}, t.vocab_rows()), m.out_w);
    if (c.output_layer_bias) bind(t.bias("output_layer.bias", c.padded_vocab_size, t.vocab_rows()), m.out_b);
  } else {
    ParamTensor wte = t.weight("embedding.word_embeddings.weight", {c.padded_vocab_size, c.hidden_size}, t.vocab_rows(),
                               TensorSpecs::Init::Embedding);
    wte.tied_copy = !c.has_embedding;
    bind(std::move(wte), m.out_w);
  }
}

// Every tensor of the stage: embedding (first stage), its layers, head (last stage).
template <class P, class Bind>
void for_each_stage_tensor(const TensorSpecs& t, StageTensors<P>& m, Bind&& bind) {
  const StageConfig& c = t.config();
  if (c.has_embedding) for_each_embedding_tensor(t, m.embedding, bind);
  m.layers.resize(std::size_t(c.num_local_layers()));
  for (int li = 0; li < c.num_local_layers(); ++li) for_each_layer_tensor(t, c.layer_first + li, m.layers[li], bind);
  if (c.has_head) for_each_head_tensor(t, m.head, bind);
}

template <class P, class Bind>
void TensorSpecs::norm(const std::string& prefix, NormTensors<P>& m, Bind& bind) const {
  bind(norm_weight(prefix + ".weight"), m.w);
  if (c_.normalization == Normalization::LayerNorm) bind(bias(prefix + ".bias", c_.hidden_size), m.b);
}

}  // namespace gptrain
