// The configuration of a GPT stage in three parts: the architecture (ModelConfig: GPT-2, Llama, NeoX, GPT-J
// are all settings of one transformer), how a run uses the stage (StageRun: micro-batch, recomputation,
// offloading) and where it sits in a parallel layout (StagePlacement: TP/EP rank, global layer range);
// StageConfig joins them and LocalSizes derives this rank's shard sizes from it.
#pragma once

#include "core/model/fp8_config.h"
#include "core/model/moe_config.h"
#include "core/model/recompute.h"
#include "kernels/backend.h"

#include <cstdint>
#include <optional>
#include <string>

namespace gptrain {

enum class Normalization : uint8_t { LayerNorm, RMSNorm };
enum class PositionEmbedding : uint8_t { LearnedAbsolute, Rope, None };
// none: x + attn(ln1(x)) then + mlp(ln2(.)); shared_norm (GPT-J): x + attn(ln1(x)) + mlp(ln1(x));
// two_norms (NeoX): x + attn(ln1(x)) + mlp(ln2(x)).
enum class ParallelResidual : uint8_t { None, SharedNorm, TwoNorms };

const char* normalization_name(Normalization n);           // "LayerNorm" | "RMSNorm"
const char* position_embedding_name(PositionEmbedding p);  // "learned_absolute" | "rope" | "none"
const char* parallel_residual_name(ParallelResidual p);    // "none" | "shared_norm" | "two_norms"
Normalization parse_normalization(const std::string& s);   // throws Error naming the choices
PositionEmbedding parse_position_embedding(const std::string& s);
ParallelResidual parse_parallel_residual(const std::string& s);

// The architecture: what a checkpoint's "model" object records (core/checkpoint/model_json.h), the same on
// every rank and in every parallel layout.
struct ModelConfig {
  // ---- global sizes (Megatron flag names in comments) ----
  int num_layers = 0;               // --num-layers
  int hidden_size = 0;              // --hidden-size (C)
  int num_attention_heads = 0;      // --num-attention-heads (NH)
  int num_query_groups = 0;         // --num-query-groups with GQA, else = heads (NKV)
  int kv_channels = 0;              // --kv-channels (HS), default C / NH
  int ffn_hidden_size = 0;          // --ffn-hidden-size (F)
  int seq_length = 0;               // --seq-length (T)
  int max_position_embeddings = 0;  // --max-position-embeddings (P)
  int vocab_size = 0;               // true tokenizer vocabulary
  int padded_vocab_size = 0;        // vocab rounded up to make_vocab_size_divisible_by * TP size
  // ---- switches ----
  Normalization normalization = Normalization::LayerNorm;
  float norm_epsilon = 1e-5f;
  // --apply-layernorm-1p: every norm weight (LayerNorm and RMSNorm) stores gamma - 1, initialised to 0;
  // the norms scale by 1 + weight (Megatron's zero-centred gamma).
  bool apply_layernorm_1p = false;
  // --qk-layernorm: after the QKV linear and before RoPE, every query head and every key head is normalized
  // over its HS dims (RMSNorm), with one (HS) weight shared by the query heads and one by the key heads.
  bool qk_layernorm = false;
  // --qk-l2-norm (Llama-4): at the same place, every query and key head becomes x * rsqrt(mean(x^2) + eps) with
  // eps = --norm-epsilon, without weights.
  bool qk_l2_norm = false;
  PositionEmbedding position_embedding = PositionEmbedding::LearnedAbsolute;
  float rotary_percent = 1.0f;
  float rotary_base = 10000.0f;
  bool rotary_interleaved = false;
  // --use-rope-scaling: Llama-3.1's frequency scaling (--rope-scaling-factor and gptrain's
  // --rope-scaling-{low-freq-factor,high-freq-factor,original-max-position-embeddings}); rope only. Also
  // --rotary-seq-len-interpolation-factor (positions divided) and --position-embedding-type yarn (rope with
  // RopeScaling::yarn: YaRN's frequencies and concentration, --rotary-scaling-factor, --yarn-*, --mscale*).
  RopeScaling rope_scaling;
  // Sliding-window attention, Megatron's --window-size (window_size, 0): query t sees keys
  // t - window_size .. t (window_size + 1 keys); -1: full causal attention. --window-attn-skip-freq N > 0
  // keeps every N-th layer, counted from 1 as Megatron does, at full attention (0: every layer windowed).
  int window_size = -1;
  int window_attn_skip_freq = 0;
  bool swiglu = false;
  // gptrain: gated GELU MLP (GeGLU, Gemma's): gelu(gate) * up with the GELU of `gelu`; excludes swiglu.
  bool geglu = false;
  GeluKind gelu = GeluKind::Tanh;
  // --squared-relu: the (non-gated) MLP activation is relu(x)^2 instead of GELU; excludes swiglu and geglu.
  bool squared_relu = false;
  // gptrain: the embedding output is multiplied by sqrt(hidden_size) in fp32 (Gemma); the tied output layer
  // reads the unscaled table.
  bool scale_embeddings_by_sqrt_hidden = false;
  bool add_bias_linear = true;
  bool add_qkv_bias = false;  // qkv bias even when add_bias_linear is off
  // gptrain: no bias on qkv and the attention output projection while the MLP keeps its biases
  // (GPT-J's layout); needs add_bias_linear, excludes add_qkv_bias.
  bool disable_bias_attention = false;
  bool untie_embeddings_and_output_weights = false;
  bool output_layer_bias = false;  // GPT-J lm_head bias (untied only)
  ParallelResidual parallel_residual = ParallelResidual::None;
  float hidden_dropout = 0.1f;
  float attention_dropout = 0.1f;
  float init_method_std = 0.02f;
  // --init-method-xavier-uniform: Megatron's init_method and scaled_init_method become Xavier-uniform,
  // U(-a, a) with a = sqrt(6 / (fan_in + fan_out)) of each weight's global (per-expert) shape.
  bool init_method_xavier_uniform = false;
  // --embedding-init-method-std: N(0, std) for the word and position embeddings; unset: init_method_std
  // (and Xavier-uniform with --init-method-xavier-uniform, as Megatron falls back to init_method).
  std::optional<float> embedding_init_method_std;
  // Mixture of experts: the layers whose MLP is an MoE MLP, router, experts, losses (moe_config.h).
  MoeConfig moe;

  // Fills the derived defaults (kv_channels, num_query_groups, ffn, the MoE layer pattern and expert
  // width) and checks every constraint of the architecture alone; the vocabulary is not needed. Throws
  // Error naming the flag and what is wrong.
  void check_architecture();
  void check_moe();  // part of check_architecture: the MoE defaults and constraints
  // check_architecture, then padded_vocab_size for a run of `tp_size` tensor-parallel ranks (the vocabulary
  // must be known).
  void finalize(int make_vocab_size_divisible_by, int tp_size = 1);

  bool qkv_bias() const { return (add_bias_linear && !disable_bias_attention) || add_qkv_bias; }
  bool proj_bias() const { return add_bias_linear && !disable_bias_attention; }  // attention output projection
  bool mlp_bias() const { return add_bias_linear; }                              // fc1 and fc2
  bool gated_mlp() const { return swiglu || geglu; }                             // fc1 rows [gate | up], 2F wide
  // The embedding multiplier: sqrt(hidden_size) rounded to fp32 (as transformers' Gemma), else 1.
  float embedding_scale() const;
  bool tied_head() const { return !untie_embeddings_and_output_weights; }
  // The attention window of global layer `layer` (0-based): window_size, or -1 (full) on the layers
  // --window-attn-skip-freq leaves unwindowed.
  int attention_window(int layer) const {
    const bool full = window_size < 0 || (window_attn_skip_freq > 0 && (layer + 1) % window_attn_skip_freq == 0);
    return full ? -1 : window_size;
  }
};

// How a run uses a stage: the batch shape its activation buffers are sized for, the init key, and what
// backward fuses, recomputes or offloads.
struct StageRun {
  int micro_batch_size = 1;  // B
  uint64_t seed = 1234;      // init RNG key (dropout seeds come per micro-batch)
  // Fused backend ops: residual add + the norm that reads it, linear + GELU (kernels/backend.h). Same
  // results as the unfused op sequence (bit for bit on CPU); false runs that sequence (tests compare them).
  bool fused_ops = true;
  // Which activations backward recomputes instead of keeping (--recompute-*; recompute.h).
  RecomputeConfig recompute;
  // Activation offloading (--cpu-offloading-num-layers N): what the global layers [0, N) keep for backward
  // goes to host memory after their forward and comes back before their backward (activation_offload.h).
  int cpu_offload_layers = 0;
  // FP8 training of the layers' linear GEMMs (--fp8-format, fp8_config.h).
  Fp8Config fp8;
};

// Where a stage sits in the parallel layout (defaults: the whole model on one process).
struct StagePlacement {
  int tp_size = 1;
  int tp_rank = 0;
  bool sequence_parallel = false;  // residual stream rows sharded over TP (hooks gather/scatter)
  // Expert parallelism: this rank holds experts [ep_rank * E / ep_size, (ep_rank + 1) * E / ep_size).
  int ep_size = 1;
  int ep_rank = 0;
  // Expert tensor parallelism (--expert-tensor-parallel-size): each routed expert's fc1 rows and fc2 columns
  // split over etp_size ranks (Megatron's column / row split); 1: the experts are whole on every rank.
  int etp_size = 1;
  int etp_rank = 0;
  // Context parallelism: this rank holds 2 of the 2 * cp_size chunks of every sequence (seq_length / cp_size
  // local rows per sample, kernels/attention/attention_block_math.h); attention runs through the hooks.
  int cp_size = 1;
  int cp_rank = 0;
  int layer_first = 0;        // global layer range [layer_first, layer_last) of this stage
  int layer_last = -1;        // -1: num_layers
  bool has_embedding = true;  // first stage
  bool has_head = true;       // last stage: final norm, output layer, loss
};

// Everything a GPT stage is built from: the architecture, how the run uses it, where it sits. The model
// maths reads only the derived local sizes; it never talks to other ranks (parallel_hooks.h).
struct StageConfig : ModelConfig, StageRun, StagePlacement {
  StageConfig() = default;
  explicit StageConfig(const ModelConfig& model, const StageRun& run = {}, const StagePlacement& placement = {})
      : ModelConfig(model), StageRun(run), StagePlacement(placement) {}
  // ModelConfig::finalize for this TP size, then check_stage. Throws Error saying what is wrong.
  void finalize(int make_vocab_size_divisible_by);
  // The constraints of the run and the placement against the architecture (divisibility by TP and EP,
  // the layer range, recomputation and offloading); fills layer_last. The vocabulary is not needed.
  void check_stage();
  int num_local_layers() const { return layer_last - layer_first; }
  // The dense MLP runs fc1 + GELU and fc2's backward through the GELU as the fused ops.
  bool fused_gelu_mlp() const { return fused_ops && !gated_mlp() && !squared_relu; }
};

// Sizes of this TP rank's shard, derived from a finalized StageConfig.
struct LocalSizes {
  int B, T, N;      // micro-batch, sequence, rows = B*T
  int N_seq;        // rows of the residual stream on this rank (N / tp with sequence parallel)
  int C;            // hidden
  int NH, NKV, HS;  // local query heads, local kv groups, head dim
  int QKV;          // (NH + 2*NKV) * HS, local qkv width
  int ATT;          // NH * HS, local attention output width
  int F;            // local ffn width
  int F1;           // local fc1 output width: 2F with swiglu
  int V;            // local padded vocab rows
  int vocab_start;  // first global vocab row held here
  int V_valid;      // real (unpadded) vocab rows among the local ones
  int rotary_dim;   // dims of each head rotated (rope only), even
  int head_start;   // first global query head held here
  int group_start;  // first global kv group held here
  int ffn_start;    // first global ffn column held here
  // Mixture of experts (0 without --num-experts):
  int E, K;                  // experts, router top-k
  int E_local;               // experts held here (expert parallelism splits them)
  int expert_first;          // global index of the first expert held here
  int FE, FE1;               // expert ffn width held here (split over ETP), expert fc1 output width (2 FE with swiglu)
  int expert_ffn_start = 0;  // first global ffn column of this rank's share of every expert (ETP)
  int FS, FS1;               // shared expert ffn width, its fc1 output width (0 without a shared expert)
  int moe_capacity;          // tokens an expert keeps (moe_expert_capacity); -1: dropless
  int moe_rows;              // rows of the permuted buffer at most: N * K dropless, E * min(capacity, N) padded
  // Rows this rank's experts compute on at most: moe_rows in one process; with expert parallelism the rows
  // every EP rank may send them, EP * N * min(K, E_local) dropless, at most EP * E_local * min(capacity, N).
  int moe_expert_rows;
};
LocalSizes local_sizes(const StageConfig& c);

}  // namespace gptrain
