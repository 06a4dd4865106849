#include "core/model/model_config.h"

#include <limits>

#include "core/common/error.h"
#include "kernels/moe/moe.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gptrain {

const char* normalization_name(Normalization n) { return n == Normalization::LayerNorm ? "LayerNorm" : "RMSNorm"; }

const char* position_embedding_name(PositionEmbedding p) {
  switch (p) {
    case PositionEmbedding::LearnedAbsolute: return "learned_absolute";
    case PositionEmbedding::Rope: return "rope";
    case PositionEmbedding::None: return "none";
  }
  return "?";
}

const char* parallel_residual_name(ParallelResidual p) {
  switch (p) {
    case ParallelResidual::None: return "none";
    case ParallelResidual::SharedNorm: return "shared_norm";
    case ParallelResidual::TwoNorms: return "two_norms";
  }
  return "?";
}

Normalization parse_normalization(const std::string& s) {
  if (s == "LayerNorm") return Normalization::LayerNorm;
  if (s == "RMSNorm") return Normalization::RMSNorm;
  fail("--normalization: '{}' is not supported; expected LayerNorm or RMSNorm", s);
}

PositionEmbedding parse_position_embedding(const std::string& s) {
  if (s == "learned_absolute") return PositionEmbedding::LearnedAbsolute;
  if (s == "rope") return PositionEmbedding::Rope;
  if (s == "none") return PositionEmbedding::None;
  if (s == "yarn" || s == "mrope" || s == "relative")
    fail(
        "--position-embedding-type {}: a Megatron choice gptrain does not implement; expected learned_absolute, rope "
        "or none",
        s);
  fail("--position-embedding-type: '{}' is not a choice; expected learned_absolute, rope or none", s);
}

ParallelResidual parse_parallel_residual(const std::string& s) {
  if (s == "none") return ParallelResidual::None;
  if (s == "shared_norm") return ParallelResidual::SharedNorm;
  if (s == "two_norms") return ParallelResidual::TwoNorms;
  fail("--parallel-residual: '{}' is not a choice; expected none, shared_norm (GPT-J) or two_norms (NeoX)", s);
}

float ModelConfig::embedding_scale() const {
  // transformers multiplies by sqrt(hidden_size) computed in double and cast to the hidden dtype (fp32).
  return scale_embeddings_by_sqrt_hidden ? static_cast<float>(std::sqrt(static_cast<double>(hidden_size))) : 1.0f;
}

void ModelConfig::check_architecture() {
  check(num_layers > 0, "--num-layers must be > 0 (got {})", num_layers);
  check(hidden_size > 0, "--hidden-size must be > 0 (got {})", hidden_size);
  check(num_attention_heads > 0, "--num-attention-heads must be > 0 (got {})", num_attention_heads);
  check(seq_length > 0, "--seq-length must be > 0 (got {})", seq_length);
  if (max_position_embeddings <= 0) max_position_embeddings = seq_length;
  check(max_position_embeddings >= seq_length, "--max-position-embeddings ({}) must be >= --seq-length ({})",
        max_position_embeddings, seq_length);
  if (kv_channels <= 0) {
    check(hidden_size % num_attention_heads == 0,
          "--hidden-size ({}) must be divisible by --num-attention-heads ({}) unless --kv-channels is given",
          hidden_size, num_attention_heads);
    kv_channels = hidden_size / num_attention_heads;
  }
  if (num_query_groups <= 0) num_query_groups = num_attention_heads;
  check(num_attention_heads % num_query_groups == 0,
        "--num-attention-heads ({}) must be divisible by --num-query-groups ({})", num_attention_heads,
        num_query_groups);
  if (ffn_hidden_size <= 0) {
    ffn_hidden_size = swiglu ? (8 * hidden_size / 3 / 64) * 64 : 4 * hidden_size;
    check(ffn_hidden_size > 0, "--swiglu with --hidden-size {} gives ffn size 0; pass --ffn-hidden-size", hidden_size);
  }
  if (position_embedding == PositionEmbedding::Rope) {
    check(rotary_percent > 0.0f && rotary_percent <= 1.0f, "--rotary-percent must be in (0, 1] (got {})",
          rotary_percent);
    const int rd = int(float(kv_channels) * rotary_percent);
    check(rd >= 2 && rd % 2 == 0,
          "--rotary-percent {} of kv-channels {} gives {} rotary dims; expected an even number >= 2", rotary_percent,
          kv_channels, rd);
    check(rotary_base > 0.0f, "--rotary-base must be > 0 (got {})", rotary_base);
  }
  if (rope_scaling.llama3) {
    const RopeScaling& s = rope_scaling;
    check(position_embedding == PositionEmbedding::Rope,
          "--use-rope-scaling scales rotary frequencies and needs --position-embedding-type rope (this model has {})",
          position_embedding_name(position_embedding));
    check(s.factor > 0 && std::isfinite(s.factor), "--rope-scaling-factor must be > 0 (got {})", s.factor);
    check(
        s.low_freq_factor > 0 && s.low_freq_factor < s.high_freq_factor && std::isfinite(s.high_freq_factor),
        "--use-rope-scaling needs 0 < --rope-scaling-low-freq-factor < --rope-scaling-high-freq-factor (got {} and {})",
        s.low_freq_factor, s.high_freq_factor);
    check(s.original_max_positions > 0, "--rope-scaling-original-max-position-embeddings must be > 0 (got {})",
          s.original_max_positions);
  }
  {
    const RopeScaling& s = rope_scaling;
    check(s.seq_len_interpolation_factor > 0 && std::isfinite(s.seq_len_interpolation_factor),
          "--rotary-seq-len-interpolation-factor must be > 0 (got {})", s.seq_len_interpolation_factor);
    check(s.seq_len_interpolation_factor == 1.0 || position_embedding == PositionEmbedding::Rope,
          "--rotary-seq-len-interpolation-factor scales rotary positions and needs --position-embedding-type rope "
          "(this model has {})",
          position_embedding_name(position_embedding));
  }
  if (rope_scaling.yarn) {
    const RopeScaling& s = rope_scaling;
    // Megatron's YaRN rotates whole heads, half-split, and ignores linear interpolation: refuse what it would
    // silently drop or assert on.
    check(position_embedding == PositionEmbedding::Rope && !s.llama3,
          "--position-embedding-type yarn excludes --use-rope-scaling (one frequency scaling at a time)");
    check(!rotary_interleaved, "--position-embedding-type yarn does not support --rotary-interleaved (as in Megatron)");
    check(rotary_percent == 1.0f,
          "--position-embedding-type yarn rotates the whole head (Megatron's YaRN ignores --rotary-percent); drop "
          "--rotary-percent {}",
          rotary_percent);
    check(s.seq_len_interpolation_factor == 1.0,
          "--rotary-seq-len-interpolation-factor has no effect with --position-embedding-type yarn in Megatron; "
          "drop it (YaRN's factor is --rotary-scaling-factor)");
    check(s.yarn_factor > 0 && std::isfinite(s.yarn_factor), "--rotary-scaling-factor must be > 0 (got {})",
          s.yarn_factor);
    check(s.yarn_original_max_positions > 0, "--yarn-original-max-position-embeddings must be > 0 (got {})",
          s.yarn_original_max_positions);
    check(s.yarn_beta_fast > 0 && s.yarn_beta_slow > 0,
          "--yarn-beta-fast and --yarn-beta-slow must be > 0 (got {} and {})", s.yarn_beta_fast, s.yarn_beta_slow);
    check(std::isfinite(s.yarn_mscale) && std::isfinite(s.yarn_mscale_all_dim) &&
              (s.yarn_factor <= 1 || 0.1 * s.yarn_mscale_all_dim * std::log(s.yarn_factor) + 1 != 0),
          "--mscale-all-dim {} makes YaRN's concentration factor divide by zero", s.yarn_mscale_all_dim);
  }
  check(!(qk_l2_norm && qk_layernorm),
        "--qk-l2-norm and --qk-layernorm exclude each other (Megatron would drop the --qk-layernorm weights "
        "silently); pass one");
  check(window_size >= -1, "--window-size left extent must be -1 (no window) or >= 0 (got {})", window_size);
  check(window_attn_skip_freq >= 0, "--window-attn-skip-freq must be >= 1 (got {})", window_attn_skip_freq);
  check(window_attn_skip_freq == 0 || window_size >= 0,
        "--window-attn-skip-freq {} needs --window-size (it picks which layers skip the window)",
        window_attn_skip_freq);
  check(!(swiglu && geglu), "--swiglu and --geglu exclude each other (the gate takes SiLU or GELU)");
  // Megatron asserts it: its squared ReLU replaces the MLP's activation, it has no gated form.
  check(!(squared_relu && gated_mlp()), "--squared-relu excludes --{} (Megatron's squared ReLU MLP is not gated)",
        swiglu ? "swiglu" : "geglu");
  check(norm_epsilon > 0.0f, "--norm-epsilon must be > 0 (got {})", norm_epsilon);
  check(!qk_layernorm || normalization == Normalization::RMSNorm,
        "--qk-layernorm with --normalization LayerNorm is not implemented: the per-head Q/K norm is RMSNorm only "
        "(add --normalization RMSNorm)");
  check(hidden_dropout >= 0.0f && hidden_dropout < 1.0f, "--hidden-dropout must be in [0, 1) (got {})", hidden_dropout);
  check(attention_dropout >= 0.0f && attention_dropout < 1.0f, "--attention-dropout must be in [0, 1) (got {})",
        attention_dropout);
  check(init_method_std > 0.0f, "--init-method-std must be > 0 (got {})", init_method_std);
  check(!embedding_init_method_std || *embedding_init_method_std > 0.0f,
        "--embedding-init-method-std must be > 0 (got {})", embedding_init_method_std.value_or(0.0f));
  check(!output_layer_bias || untie_embeddings_and_output_weights,
        "an output-layer bias needs --untie-embeddings-and-output-weights");
  check(!disable_bias_attention || add_bias_linear,
        "--disable-bias-attention with --disable-bias-linear: there are no attention biases to remove; "
        "drop one of the two (--disable-bias-attention keeps the MLP biases)");
  check(!(disable_bias_attention && add_qkv_bias),
        "--disable-bias-attention and --add-qkv-bias contradict each other (no attention biases vs a QKV bias)");
  check_moe();
}

void ModelConfig::check_moe() {
  MoeConfig& m = moe;
  if (!m.enabled()) {
    m.layer_pattern.clear();  // no MoE layer (is_moe_layer is false for every layer)
    return;
  }
  if (m.layer_pattern.empty()) m.layer_pattern.assign(std::size_t(num_layers), 1);
  check(int(m.layer_pattern.size()) == num_layers, "--moe-layer-freq gives {} layers; --num-layers is {}",
        m.layer_pattern.size(), num_layers);
  check(m.topk >= 1 && m.topk <= m.num_experts, "--moe-router-topk {} must be in [1, --num-experts {}]", m.topk,
        m.num_experts);
  if (m.ffn_hidden_size <= 0) m.ffn_hidden_size = ffn_hidden_size;
  check(m.shared_expert_intermediate_size >= 0, "--moe-shared-expert-intermediate-size must be > 0 (got {})",
        m.shared_expert_intermediate_size);
  check(!m.shared_expert_gate || m.shared_expert_intermediate_size > 0,
        "--moe-shared-expert-gate gates the shared expert: it needs --moe-shared-expert-intermediate-size");
  check(m.topk_scaling_factor >= 0.0f, "--moe-router-topk-scaling-factor must be > 0 (got {})", m.topk_scaling_factor);
  check(m.capacity_factor < 0.0 || m.capacity_factor > 0.0, "--moe-expert-capacity-factor must be > 0 (got {})",
        m.capacity_factor);
  check(!m.pad_to_capacity || m.capacity_factor > 0.0,
        "--moe-pad-expert-input-to-capacity needs --moe-expert-capacity-factor (as Megatron)");
  if (m.expert_bias) {
    check(m.score == MoeScore::Sigmoid,
          "--moe-router-enable-expert-bias needs --moe-router-score-function sigmoid (as Megatron: the bias is added "
          "to sigmoid scores)");
    check(!m.sinkhorn(), "--moe-router-enable-expert-bias does not apply to --moe-router-load-balancing-type sinkhorn");
    check(!m.pad_to_capacity,
          "--moe-router-enable-expert-bias with --moe-pad-expert-input-to-capacity: Megatron counts the padding as "
          "routed tokens, so every expert has the same count and the bias never moves; drop one of them");
  }
  // Megatron limits the choice by groups when --moe-router-group-topk is given; the number of groups alone
  // does nothing (train_args warns).
  if (m.group_topk <= 0) m.num_groups = 0;
  if (m.group_topk > 0) {
    check(m.num_groups > 0, "--moe-router-group-topk {} needs --moe-router-num-groups (as Megatron)", m.group_topk);
    check(m.num_experts % m.num_groups == 0 && m.num_groups <= kMoeMaxGroups,
          "--moe-router-num-groups {} must divide --num-experts {} (and be at most {})", m.num_groups, m.num_experts,
          kMoeMaxGroups);
    check(m.group_topk <= m.num_groups, "--moe-router-group-topk {} must be at most --moe-router-num-groups {}",
          m.group_topk, m.num_groups);
    check(m.group_topk <= m.topk,
          "--moe-router-group-topk {} must be at most --moe-router-topk {} (a group is scored by its top "
          "topk / group_topk experts)",
          m.group_topk, m.topk);
    check(m.group_topk * (m.num_experts / m.num_groups) >= m.topk,
          "--moe-router-group-topk {} groups of {} experts hold fewer than --moe-router-topk {} experts", m.group_topk,
          m.num_experts / m.num_groups, m.topk);
    check(!m.sinkhorn(), "group-limited routing does not apply to --moe-router-load-balancing-type sinkhorn");
  }
  check(!add_bias_linear,
        "MoE layers (--num-experts) have no biases in gptrain (as Megatron's grouped GEMM experts): add "
        "--disable-bias-linear");
  check(parallel_residual == ParallelResidual::None,
        "MoE layers need --parallel-residual none (a parallel-residual MoE block is not implemented)");
}

void ModelConfig::finalize(int make_vocab_size_divisible_by, int tp_size) {
  check_architecture();
  check(vocab_size > 0, "vocabulary size must be > 0 (got {})", vocab_size);
  check(make_vocab_size_divisible_by >= 1, "--make-vocab-size-divisible-by must be >= 1 (got {})",
        make_vocab_size_divisible_by);
  check(tp_size >= 1, "tensor parallel size {} is invalid", tp_size);
  const int64_t m = int64_t(make_vocab_size_divisible_by) * tp_size;
  const int64_t padded = (int64_t(vocab_size) + m - 1) / m * m;
  // Token ids are int32, and the padded table must be indexable by them.
  check(padded <= std::numeric_limits<int32_t>::max(),
        "vocabulary of {} tokens, padded to a multiple of {} (--make-vocab-size-divisible-by x TP), gives {} rows: "
        "more than the int32 token ids can address",
        vocab_size, m, padded);
  padded_vocab_size = int(padded);
}

void StageConfig::finalize(int make_vocab_size_divisible_by) {
  ModelConfig::finalize(make_vocab_size_divisible_by, tp_size);
  check_stage();
}

void StageConfig::check_stage() {
  check(micro_batch_size > 0, "--micro-batch-size must be > 0 (got {})", micro_batch_size);
  // A micro-batch's rows (and an MoE layer's routed rows, LocalSizes) are counted in int.
  const int64_t rows = int64_t(micro_batch_size) * seq_length;
  check(rows <= std::numeric_limits<int>::max(),
        "--micro-batch-size {} x --seq-length {} = {} tokens per micro-batch, more than the {} a micro-batch may "
        "hold (its rows are counted in 32 bits)",
        micro_batch_size, seq_length, rows, std::numeric_limits<int>::max());
  if (moe.enabled())
    check(rows * moe.num_experts <= std::numeric_limits<int>::max(),
          "--micro-batch-size {} x --seq-length {} x --num-experts {}: an MoE layer's routed rows (at most tokens x "
          "experts) could exceed {} (they are counted in 32 bits)",
          micro_batch_size, seq_length, moe.num_experts, std::numeric_limits<int>::max());
  check(tp_size >= 1 && tp_rank >= 0 && tp_rank < tp_size, "tensor parallel rank {} of size {} is invalid", tp_rank,
        tp_size);
  check(num_attention_heads % tp_size == 0,
        "--num-attention-heads ({}) must be divisible by --tensor-model-parallel-size ({})", num_attention_heads,
        tp_size);
  check(num_query_groups % tp_size == 0,
        "--num-query-groups ({}) must be divisible by --tensor-model-parallel-size ({})", num_query_groups, tp_size);
  check(ffn_hidden_size % tp_size == 0, "--ffn-hidden-size ({}) must be divisible by --tensor-model-parallel-size ({})",
        ffn_hidden_size, tp_size);
  check(cp_size >= 1 && cp_rank >= 0 && cp_rank < cp_size, "context parallel rank {} of size {} is invalid", cp_rank,
        cp_size);
  if (cp_size > 1) {
    check(seq_length % (2 * cp_size) == 0,
          "--seq-length {} must be divisible by 2 x --context-parallel-size {} (= {}): each sequence is split in "
          "2 x CP chunks, two per CP rank",
          seq_length, cp_size, 2 * cp_size);
    check(window_size < 0, "--window-size with --context-parallel-size > 1 is not supported yet");
    check(!moe.enabled(), "--num-experts with --context-parallel-size > 1 is not supported yet (MoE layers with CP)");
    if (sequence_parallel)
      check((int64_t(micro_batch_size) * (seq_length / cp_size)) % tp_size == 0,
            "--sequence-parallel with --context-parallel-size {}: micro-batch-size * seq-length / CP ({}) must be "
            "divisible by the TP size ({})",
            cp_size, int64_t(micro_batch_size) * (seq_length / cp_size), tp_size);
  }
  if (sequence_parallel)
    check((int64_t(micro_batch_size) * seq_length) % tp_size == 0,
          "--sequence-parallel: micro-batch-size * seq-length ({}) must be divisible by the TP size ({})",
          int64_t(micro_batch_size) * seq_length, tp_size);
  if (layer_last < 0) layer_last = num_layers;
  check(layer_first >= 0 && layer_first <= layer_last && layer_last <= num_layers,
        "stage layer range [{}, {}) is outside [0, {})", layer_first, layer_last, num_layers);
  check(ep_size >= 1 && ep_rank >= 0 && ep_rank < ep_size, "expert parallel rank {} of size {} is invalid", ep_rank,
        ep_size);
  if (moe.enabled())
    check(moe.num_experts % ep_size == 0, "--num-experts ({}) must be divisible by --expert-model-parallel-size ({})",
          moe.num_experts, ep_size);
  check(etp_size >= 1 && etp_rank >= 0 && etp_rank < etp_size, "expert tensor parallel rank {} of size {} is invalid",
        etp_rank, etp_size);
  if (moe.enabled())
    check(moe.ffn_hidden_size % etp_size == 0,
          "--moe-ffn-hidden-size ({}) must be divisible by --expert-tensor-parallel-size ({})", moe.ffn_hidden_size,
          etp_size);
  check(cpu_offload_layers >= 0 && cpu_offload_layers < num_layers,
        "--cpu-offloading-num-layers {}: CPU offloading can be done only for layers less than --num-layers {} (as "
        "Megatron: the last layer's activations are needed at once by backward)",
        cpu_offload_layers, num_layers);
  if (recompute.distribute_saved_activations) {
    check(recompute.full(), "--distribute-saved-activations applies to --recompute-granularity full (as Megatron)");
    check(tp_size > 1,
          "--distribute-saved-activations splits the kept inputs over tensor-parallel ranks: it needs "
          "--tensor-model-parallel-size > 1");
    check(!sequence_parallel,
          "--distribute-saved-activations must be off with --sequence-parallel (as Megatron: sequence "
          "parallelism already splits the kept inputs)");
    check(int64_t(micro_batch_size) * seq_length * hidden_size % tp_size == 0,
          "--distribute-saved-activations: a layer input of --micro-batch-size {} x --seq-length {} x --hidden-size {} "
          "elements does not split into {} equal parts",
          micro_batch_size, seq_length, hidden_size, tp_size);
  }
}

LocalSizes local_sizes(const StageConfig& c) {
  LocalSizes s{};
  s.B = c.micro_batch_size;
  s.T = c.seq_length / c.cp_size;  // this rank's rows of each sequence
  s.N = s.B * s.T;
  s.N_seq = c.sequence_parallel ? s.N / c.tp_size : s.N;
  s.C = c.hidden_size;
  s.NH = c.num_attention_heads / c.tp_size;
  s.NKV = c.num_query_groups / c.tp_size;
  s.HS = c.kv_channels;
  s.QKV = (s.NH + 2 * s.NKV) * s.HS;
  s.ATT = s.NH * s.HS;
  s.F = c.ffn_hidden_size / c.tp_size;
  s.F1 = c.gated_mlp() ? 2 * s.F : s.F;
  s.V = c.padded_vocab_size / c.tp_size;
  s.vocab_start = c.tp_rank * s.V;
  s.V_valid = std::max(0, std::min(s.V, c.vocab_size - s.vocab_start));
  s.rotary_dim = c.position_embedding == PositionEmbedding::Rope ? int(float(c.kv_channels) * c.rotary_percent) : 0;
  s.head_start = c.tp_rank * s.NH;
  s.group_start = c.tp_rank * s.NKV;
  s.ffn_start = c.tp_rank * s.F;
  const MoeConfig& m = c.moe;
  if (m.enabled()) {
    s.E = m.num_experts;
    s.K = m.topk;
    s.E_local = m.num_experts / c.ep_size;
    s.expert_first = c.ep_rank * s.E_local;
    s.FE = m.ffn_hidden_size / c.etp_size;
    s.expert_ffn_start = c.etp_rank * s.FE;
    s.FE1 = c.gated_mlp() ? 2 * s.FE : s.FE;
    s.FS = m.shared_expert_intermediate_size;
    s.FS1 = c.gated_mlp() ? 2 * s.FS : s.FS;
    s.moe_capacity = m.capacity_factor > 0.0 ? moe_expert_capacity(s.N, s.E, s.K, m.capacity_factor) : -1;
    s.moe_rows = s.N * s.K;
    if (m.pad_to_capacity) s.moe_rows = std::max(s.moe_rows, s.E * std::min(s.moe_capacity, s.N));
    s.moe_expert_rows = s.moe_rows;
    if (c.ep_size > 1) {
      const int kept_cap = s.moe_capacity > 0 ? s.E_local * std::min(s.moe_capacity, s.N) : -1;
      int per_source = s.N * std::min(s.K, s.E_local);
      if (kept_cap >= 0) per_source = m.pad_to_capacity ? kept_cap : std::min(per_source, kept_cap);
      s.moe_expert_rows = c.ep_size * per_source;
    }
  } else {
    s.moe_capacity = -1;
    s.moe_expert_rows = 0;
  }
  return s;
}

}  // namespace gptrain
