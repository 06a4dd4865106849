// Parsing, Megatron's validate_args consistency checks, and the model config derived from the flags.
#include "core/config/train_args.h"

#include <algorithm>
#include <cmath>

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/common/log_level.h"
#include "core/config/flag_table.h"
#include "core/config/fp8_args.h"
#include "core/config/use_checkpoint_args.h"
#include "core/optim/newton_schulz.h"
#include "core/schedule/batch_schedule.h"
#include "data/loader/data_args_files.h"
#include "kernels/backend.h"

namespace gptrain {

namespace {

// --use-checkpoint-args, before the flags' own checks (Megatron calls load_args_from_checkpoint before
// validate_args).
void take_checkpoint_args(FlagTable& t, TrainArgs& a) {
  check(a.checkpoint.load.has_value(), "--use-checkpoint-args requires --load");
  std::string dir;
  const std::optional<nlohmann::json> recorded =
      recorded_checkpoint_args(*a.checkpoint.load, a.checkpoint.ckpt_step, &dir);
  if (!recorded) {
    a.checkpoint_args_lines.push_back(
        dir.empty() ? fmt::format("--use-checkpoint-args: no checkpoint in {} to provide arguments, using provided "
                                  "arguments",
                                  *a.checkpoint.load)
                    : fmt::format("--use-checkpoint-args: checkpoint {} does not have arguments saved, using provided "
                                  "arguments",
                                  dir));
    return;
  }
  std::vector<std::string> overridden;
  a.checkpoint_args_lines = apply_checkpoint_args(t, *recorded, dir + "/metadata.json: ", overridden);
  for (const std::string& o : overridden)
    log::warn("--use-checkpoint-args: the checkpoint's model flags replace the command line's {}", o);
}

}  // namespace

std::optional<TrainArgs> parse_train_args(int argc, const char* const* argv, int world_size) {
  TrainArgs a;
  FlagTable t = train_flag_table(a);
  if (!t.parse("pretrain_gpt", argc, argv)) return std::nullopt;  // --help or --list-flags printed
  log::set_python_logging_level(a.logging.logging_level);         // before the flags' own warnings
  if (a.checkpoint.use_checkpoint_args) take_checkpoint_args(t, a);
  // Megatron's validate_args: the legacy RoPE switch sets the type (whatever --position-embedding-type says).
  if (a.model.use_rotary_position_embeddings) a.model.position_embedding_type = "rope";
  // Megatron refuses its deprecated --no-position-embedding unless the positions are rotary.
  check(!t.given("no-position-embedding") || a.model.position_embedding_type == "rope",
        "--no-position-embedding is deprecated (as in Megatron) and taken only with --position-embedding-type rope; "
        "for no position embedding use --position-embedding-type none (this run has {})",
        a.model.position_embedding_type);
  // Megatron reads the scaling numbers only with --use-rope-scaling, and the switch only for rotary positions.
  for (const char* f : {"rope-scaling-factor", "rope-scaling-low-freq-factor", "rope-scaling-high-freq-factor",
                        "rope-scaling-original-max-position-embeddings"})
    if (t.given(f) && !a.model.use_rope_scaling) log::warn("--{} has no effect without --use-rope-scaling", f);
  if (a.model.use_rope_scaling && a.model.position_embedding_type != "rope")
    log::warn("--use-rope-scaling has no effect with --position-embedding-type {} (it scales rotary frequencies)",
              a.model.position_embedding_type);
  // Megatron reads the interpolation factor for rotary positions only, YaRN's numbers for yarn only.
  if (a.model.rotary_seq_len_interpolation_factor && a.model.position_embedding_type != "rope")
    log::warn("--rotary-seq-len-interpolation-factor has no effect with --position-embedding-type {}{}",
              a.model.position_embedding_type,
              a.model.position_embedding_type == "yarn" ? " (YaRN's factor is --rotary-scaling-factor)" : "");
  for (const char* f :
       {"rotary-scaling-factor", "yarn-original-max-position-embeddings", "yarn-beta-fast", "yarn-beta-slow",
        "yarn-correction-range-round-to-int", "no-yarn-correction-range-round-to-int", "mscale", "mscale-all-dim"})
    if (t.given(f) && a.model.position_embedding_type != "yarn")
      log::warn("--{} has no effect without --position-embedding-type yarn", f);
  check(!(a.model.yarn_correction_range_round_to_int && a.model.no_yarn_correction_range_round_to_int),
        "--yarn-correction-range-round-to-int and --no-yarn-correction-range-round-to-int contradict each other; "
        "pass one");
  // Megatron reads the MoE flags only for an MoE model and ignores them otherwise: say so.
  if (!a.moe.num_experts)
    for (const FlagTable::Flag& f : t.flags())
      if (f.group == "moe" && f.name != "num-experts" && t.given(f.name))
        log::warn("--{} has no effect without --num-experts (every MLP is dense)", f.name);
  if (a.moe.num_experts && a.moe.moe_router_pre_softmax && a.moe.moe_router_score_function == "sigmoid")
    log::warn(
        "--moe-router-pre-softmax has no effect with --moe-router-score-function sigmoid (Megatron reads it "
        "for softmax scores only)");
  check(!t.given("moe-router-dtype") || (!a.precision.bf16 && !a.precision.fp16),
        "--moe-router-dtype fp32 with --{}: gptrain's router GEMM runs in the compute dtype (its routing maths is "
        "fp32); an fp32 router GEMM under mixed precision is not implemented",
        a.precision.bf16 ? "bf16" : "fp16");
  if (a.moe.num_experts && a.moe.moe_router_num_groups && !a.moe.moe_router_group_topk)
    log::warn("--moe-router-num-groups has no effect without --moe-router-group-topk (as in Megatron)");
  if (a.moe.num_experts && t.given("moe-router-bias-update-rate") && !a.moe.moe_router_enable_expert_bias)
    log::warn("--moe-router-bias-update-rate has no effect without --moe-router-enable-expert-bias");
  if (a.dry_run_world_size) {
    check(a.dry_run, "--dry-run-world-size needs --dry-run");
    check(world_size == 1, "--dry-run-world-size {}: this job already has {} processes; drop the flag under mpirun",
          *a.dry_run_world_size, world_size);
    check(*a.dry_run_world_size >= 1, "--dry-run-world-size must be >= 1 (got {})", *a.dry_run_world_size);
  }
  if (a.dry_run_device_memory) {
    check(a.dry_run, "--dry-run-device-memory needs --dry-run (a run checks its own device)");
    check(*a.dry_run_device_memory > 0 && std::isfinite(*a.dry_run_device_memory),
          "--dry-run-device-memory must be a number of GiB > 0 (got {})", *a.dry_run_device_memory);
  }
  if (a.dry_run && world_size == 1)
    world_size =
        a.dry_run_world_size.value_or(a.parallel.tensor_model_parallel_size * a.parallel.pipeline_model_parallel_size *
                                      a.parallel.context_parallel_size);
  validate_train_args(a, world_size);
  return a;
}

nlohmann::json train_args_to_json(const TrainArgs& a) {
  TrainArgs copy = a;
  nlohmann::json j = train_flag_table(copy).to_json();
  j["data_parallel_size"] = a.data_parallel_size;
  j["num_micro_batches"] = a.num_micro_batches;
  j["params_dtype"] = dtype_name(a.params_dtype);
  return j;
}

namespace {

template <typename T>
T required(const std::optional<T>& v, const char* flag) {
  if (!v) fail("--{} is required", flag);
  return *v;
}

// Megatron's flag semantics, before the model's own checks (ModelConfig::check_architecture): the required
// flags, the defaults that depend on other flags, the switches that exclude each other.
void validate_model_flags(ModelArgs& m, const TrainingArgs& t) {
  required(m.num_layers, "num-layers");
  required(m.hidden_size, "hidden-size");
  required(m.num_attention_heads, "num-attention-heads");
  required(m.seq_length, "seq-length");
  required(t.micro_batch_size, "micro-batch-size");
  if (!m.max_position_embeddings) {
    check(m.position_embedding_type != "learned_absolute",
          "--max-position-embeddings is required with --position-embedding-type learned_absolute");
    m.max_position_embeddings = *m.seq_length;
  }
  if (!m.group_query_attention) m.num_query_groups = *m.num_attention_heads;
  // Megatron fills these only when absent; an explicit zero or negative width would build an empty layer.
  check(!m.kv_channels || *m.kv_channels > 0, "--kv-channels must be > 0 (got {})", m.kv_channels.value_or(0));
  check(!m.ffn_hidden_size || *m.ffn_hidden_size > 0, "--ffn-hidden-size must be > 0 (got {})",
        m.ffn_hidden_size.value_or(0));
  check(!(m.swiglu && !m.gelu.empty()), "--gelu and --swiglu exclude each other (SwiGLU has no GELU)");
  check(!(m.swiglu && m.geglu), "--swiglu and --geglu exclude each other (the gate takes SiLU or GELU)");
  check(!(m.squared_relu && !m.gelu.empty()),
        "--gelu and --squared-relu exclude each other (squared ReLU has no GELU)");
}

// --window-size as Megatron's tuple_type reads it ("L,R" or "(L,R)"): the left extent L, -1 for none.
// gptrain's attention is causal, so R must be 0 (Megatron's GPT passes the causal mask with it too).
int parse_window_size(const std::string& s) {
  if (s.empty()) return -1;
  std::string v = s;
  if (v.size() >= 2 && v.front() == '(' && v.back() == ')') v = v.substr(1, v.size() - 2);
  const auto comma = v.find(',');
  int left = 0, right = 0;
  try {
    check(comma != std::string::npos, "");
    std::size_t used = 0;
    left = std::stoi(v.substr(0, comma), &used);
    check(used == comma, "");
    const std::string r = v.substr(comma + 1);
    right = std::stoi(r, &used);
    check(used == r.size(), "");
  } catch (...) {
    fail("--window-size \"{}\": expected two integers \"left,right\" such as \"4095,0\"", s);
  }
  check(right == 0,
        "--window-size \"{}\": the right extent must be 0 (gptrain's attention is causal; a query never sees later "
        "keys)",
        s);
  check(left >= -1, "--window-size \"{}\": the left extent must be -1 (no window) or >= 0", s);
  return left;
}

// --window-attn-skip-freq: an integer N (Megatron's int form). Megatron's per-layer list form is refused.
int parse_window_attn_skip_freq(const std::string& s) {
  if (s.empty()) return 0;
  check(s.find('[') == std::string::npos,
        "--window-attn-skip-freq \"{}\": a per-layer list is not implemented; give an integer N (every N-th layer "
        "keeps full attention)",
        s);
  int n = 0;
  try {
    std::size_t used = 0;
    n = std::stoi(s, &used);
    check(used == s.size(), "");
  } catch (...) {
    fail("--window-attn-skip-freq \"{}\": expected an integer N >= 1", s);
  }
  check(n >= 1, "--window-attn-skip-freq must be >= 1 (got {})", n);
  return n;
}

// The model's architecture from Megatron's flags (the one place their semantics meet the model: the GQA
// switch, the GELU choice, the bias switches), checked by the model itself. The vocabulary comes later.
ModelConfig architecture_from_flags(const ModelArgs& m, const MoeArgs& moe) {
  ModelConfig c;
  c.num_layers = *m.num_layers;
  c.hidden_size = *m.hidden_size;
  c.num_attention_heads = *m.num_attention_heads;
  c.num_query_groups = m.num_query_groups;
  c.kv_channels = m.kv_channels.value_or(0);          // 0: C / NH
  c.ffn_hidden_size = m.ffn_hidden_size.value_or(0);  // 0: Megatron's default for the MLP kind
  c.seq_length = *m.seq_length;
  c.max_position_embeddings = *m.max_position_embeddings;
  c.normalization = parse_normalization(m.normalization);
  c.norm_epsilon = float(m.norm_epsilon);
  c.apply_layernorm_1p = m.apply_layernorm_1p;
  c.qk_layernorm = m.qk_layernorm;
  c.qk_l2_norm = m.qk_l2_norm;
  // YaRN is rope with YaRN's frequencies (RopeScaling::yarn), not a position embedding of its own.
  const bool yarn = m.position_embedding_type == "yarn";
  c.position_embedding = parse_position_embedding(yarn ? "rope" : m.position_embedding_type);
  c.rotary_percent = float(m.rotary_percent);
  c.rotary_base = float(m.rotary_base);
  c.rotary_interleaved = m.rotary_interleaved;
  if (m.use_rope_scaling && m.position_embedding_type == "rope") {  // Megatron's YaRN ignores it (warned above)
    c.rope_scaling.llama3 = true;
    c.rope_scaling.factor = m.rope_scaling_factor;
    c.rope_scaling.low_freq_factor = m.rope_scaling_low_freq_factor;
    c.rope_scaling.high_freq_factor = m.rope_scaling_high_freq_factor;
    c.rope_scaling.original_max_positions = m.rope_scaling_original_max_position_embeddings;
  }
  if (m.rotary_seq_len_interpolation_factor && m.position_embedding_type == "rope")
    c.rope_scaling.seq_len_interpolation_factor = *m.rotary_seq_len_interpolation_factor;
  if (yarn) {
    RopeScaling& r = c.rope_scaling;
    r.yarn = true;
    r.yarn_factor = m.rotary_scaling_factor;
    r.yarn_original_max_positions = m.yarn_original_max_position_embeddings;
    r.yarn_beta_fast = m.yarn_beta_fast;
    r.yarn_beta_slow = m.yarn_beta_slow;
    r.yarn_round_to_int = !m.no_yarn_correction_range_round_to_int;
    r.yarn_mscale = m.mscale;
    r.yarn_mscale_all_dim = m.mscale_all_dim;
  }
  c.window_size = parse_window_size(m.window_size);
  c.window_attn_skip_freq = parse_window_attn_skip_freq(m.window_attn_skip_freq);
  c.swiglu = m.swiglu;
  c.geglu = m.geglu;
  c.squared_relu = m.squared_relu;
  c.scale_embeddings_by_sqrt_hidden = m.scale_embeddings_by_sqrt_hidden;
  c.add_bias_linear = !m.disable_bias_linear;
  c.add_qkv_bias = m.add_qkv_bias;
  c.disable_bias_attention = m.disable_bias_attention;
  // Megatron: the fused bias-GELU kernel is the tanh approximation; without fusion (or without a
  // bias to fuse) the MLP calls F.gelu, the exact erf form.
  // GeGLU (Gemma) takes the tanh form unless --gelu says otherwise.
  if (m.gelu.empty())
    c.gelu = (m.geglu || (!m.no_bias_gelu_fusion && c.add_bias_linear)) ? GeluKind::Tanh : GeluKind::Erf;
  else
    c.gelu = m.gelu == "tanh" ? GeluKind::Tanh : GeluKind::Erf;
  c.untie_embeddings_and_output_weights = m.untie_embeddings_and_output_weights;
  c.output_layer_bias = m.output_layer_bias;
  c.parallel_residual = parse_parallel_residual(m.parallel_residual);
  c.hidden_dropout = float(m.hidden_dropout);
  c.attention_dropout = float(m.attention_dropout);
  c.init_method_std = float(m.init_method_std);
  c.init_method_xavier_uniform = m.init_method_xavier_uniform;
  if (m.embedding_init_method_std) c.embedding_init_method_std = float(*m.embedding_init_method_std);
  c.moe = moe_config_from_args(moe, c.num_layers);
  c.check_architecture();
  return c;
}

void validate_precision(const MixedPrecisionArgs& p) {
  check(!(p.fp16 && p.bf16), "--fp16 and --bf16 exclude each other");
  check(!p.loss_scale || p.fp16, "--loss-scale applies to --fp16 only");
  check(!p.loss_scale || *p.loss_scale > 0, "--loss-scale must be > 0");
  check(p.initial_loss_scale > 0 && p.min_loss_scale > 0 && p.min_loss_scale <= p.initial_loss_scale,
        "need 0 < --min-loss-scale ({}) <= --initial-loss-scale ({})", p.min_loss_scale, p.initial_loss_scale);
  check(p.loss_scale_window > 0, "--loss-scale-window must be > 0");
  check(p.hysteresis >= 1, "--hysteresis must be >= 1");
}

void validate_schedule(const schedule::LrScheduleArgs& s, const TrainingArgs& t, const OptimizerArgs& o) {
  check(t.train_iters.has_value() != t.train_samples.has_value(),
        "exactly one of --train-iters and --train-samples is required");
  if (t.train_iters) {
    check(*t.train_iters > 0, "--train-iters must be > 0");
    check(
        !s.lr_decay_samples && s.lr_warmup_samples == 0 && !s.lr_wsd_decay_samples,
        "with --train-iters use --lr-decay-iters / --lr-warmup-iters / --lr-wsd-decay-iters, not the *-samples forms");
  } else {
    check(*t.train_samples > 0, "--train-samples must be > 0");
    check(!s.lr_decay_iters && s.lr_warmup_iters == 0 && !s.lr_wsd_decay_iters,
          "with --train-samples use --lr-decay-samples / --lr-warmup-samples / --lr-wsd-decay-samples, not the *-iters "
          "forms");
  }
  required(s.lr, "lr");
  check(*s.lr >= 0 && s.min_lr >= 0 && s.min_lr <= *s.lr, "need 0 <= --min-lr ({}) <= --lr ({})", s.min_lr, *s.lr);
  check(!s.decoupled_lr || *s.decoupled_lr >= 0, "--decoupled-lr must be >= 0, got {}", s.decoupled_lr.value_or(0));
  check(!s.decoupled_min_lr || *s.decoupled_min_lr >= 0, "--decoupled-min-lr must be >= 0, got {}",
        s.decoupled_min_lr.value_or(0));
  check(!(s.lr_warmup_fraction && (s.lr_warmup_iters > 0 || s.lr_warmup_samples > 0)),
        "--lr-warmup-fraction and --lr-warmup-iters/--lr-warmup-samples exclude each other");
  check(!s.lr_warmup_fraction || (*s.lr_warmup_fraction >= 0 && *s.lr_warmup_fraction <= 1),
        "--lr-warmup-fraction must be in [0, 1]");
  check(!(s.override_opt_param_scheduler && s.use_checkpoint_opt_param_scheduler),
        "--override-opt-param-scheduler and --use-checkpoint-opt-param-scheduler exclude each other");
  if (s.lr_decay_style == "WSD")
    check(s.lr_wsd_decay_iters.has_value() || s.lr_wsd_decay_samples.has_value(),
          "--lr-decay-style WSD needs --lr-wsd-decay-iters (or --lr-wsd-decay-samples)");
  if (s.weight_decay_incr_style == "constant") {
    check(!s.start_weight_decay && !s.end_weight_decay,
          "--start-weight-decay/--end-weight-decay need --weight-decay-incr-style linear or cosine");
  } else {
    check(s.start_weight_decay && s.end_weight_decay,
          "--weight-decay-incr-style {} needs --start-weight-decay and --end-weight-decay", s.weight_decay_incr_style);
  }
  check(o.clip_grad >= 0, "--clip-grad must be >= 0");
  check(o.adam_beta1 >= 0 && o.adam_beta1 < 1 && o.adam_beta2 >= 0 && o.adam_beta2 < 1 && o.adam_eps > 0 &&
            std::isfinite(o.adam_eps),
        "Adam needs 0 <= beta1, beta2 < 1 and a finite eps > 0");
  check(o.sgd_momentum >= 0 && std::isfinite(o.sgd_momentum), "--sgd-momentum must be finite and >= 0 (got {})",
        o.sgd_momentum);
}

// --optimizer and the Muon flags, as Megatron's parser, its emerging-optimizer checks and torch accept them.
void validate_optimizer_choice(const TrainArgs& a) {
  const std::string& opt = a.parallel.optimizer;
  const OptimizerArgs& o = a.optimizer;
  check(opt == "adam" || opt == "sgd" || opt == "muon" || opt == "lion",
        "--optimizer {} is not implemented (adam, sgd, muon and lion are)", opt);
  if (opt == "lion") {
    check(!a.parallel.optimizer_cpu_offload, "--optimizer lion with --optimizer-cpu-offload is not implemented");
    check(!a.precision.fp16,
          "--optimizer lion with --fp16: Megatron's emerging optimizers (Lion is one) do not support fp16 either");
    check(!a.moe.num_experts, "--optimizer lion with --num-experts is not implemented");
  }
  check(o.muon_num_ns_steps >= 1, "--muon-num-ns-steps must be at least 1 (got {})", o.muon_num_ns_steps);
  check(o.muon_fp32_matmul_prec != "low",
        "--muon-fp32-matmul-prec low: torch has no 'low' float32 matmul precision (Megatron fails on it too); use "
        "medium (bf16 Newton-Schulz) or high (fp32)");
  if (o.muon_coefficient_type == "custom")
    fail("--muon-coefficient-type custom needs coefficient sets that Megatron's flags cannot give; use one of {}",
         fmt::join(newton_schulz_coefficient_types(), ", "));
  const auto& types = newton_schulz_coefficient_types();
  check(std::find(types.begin(), types.end(), o.muon_coefficient_type) != types.end(),
        "--muon-coefficient-type {}: expected one of {}", o.muon_coefficient_type, fmt::join(types, ", "));
  check(std::isfinite(o.muon_momentum) && o.muon_momentum >= 0 && o.muon_momentum <= 1,
        "--muon-momentum must be in [0, 1] (got {})", o.muon_momentum);
  if (opt != "muon") return;
  check(!(a.parallel.use_distributed_optimizer && a.parallel.overlap_param_gather),
        "--overlap-param-gather with --optimizer muon --use-distributed-optimizer is not implemented (Muon's "
        "layer-wise distributed optimizer broadcasts each stepped tensor at the end of the step)");
  check(!a.parallel.use_distributed_optimizer || a.parallel.num_distributed_optimizer_instances == 1,
        "--num-distributed-optimizer-instances {} with --optimizer muon --use-distributed-optimizer is not "
        "implemented (Muon's layer-wise distributed optimizer steps whole tensors over the whole DP group)",
        a.parallel.num_distributed_optimizer_instances);
  check(!a.parallel.optimizer_cpu_offload, "--optimizer muon with --optimizer-cpu-offload is not implemented");
  check(!a.precision.fp16, "--optimizer muon with --fp16: Megatron's emerging optimizers do not support fp16 either");
  check(!a.moe.num_experts,
        "--optimizer muon with --num-experts is not implemented (Megatron orthogonalizes every expert's matrices "
        "on their own)");
}

// The global batch (constant, ramp-up or step schedule; core/schedule/batch_schedule.h), as Megatron's
// validate_args and num-microbatches calculator check it.
// --eval-micro-batch-size / --eval-global-batch-size: Megatron's defaults and divisibility. gptrain runs an
// evaluation batch in micro-batches of --micro-batch-size (the model's buffers are sized for it; the loss is
// summed over the batch's tokens, so the split changes only the rounding), hence the second multiple.
void validate_eval_batch(TrainArgs& a) {
  TrainingArgs& t = a.training;
  if (!t.eval_micro_batch_size && !t.eval_global_batch_size) return;
  const int mbs = t.eval_micro_batch_size.value_or(*t.micro_batch_size);
  const int64_t gbs = t.eval_global_batch_size.value_or(*t.global_batch_size);
  const int64_t dp = a.data_parallel_size;
  check(mbs > 0, "--eval-micro-batch-size must be > 0 (got {})", mbs);
  check(gbs > 0, "--eval-global-batch-size must be > 0 (got {})", gbs);
  check(gbs % (int64_t(mbs) * dp) == 0,
        "--eval-global-batch-size {} must be divisible by --eval-micro-batch-size {} x data-parallel size {}", gbs, mbs,
        dp);
  check(gbs % (int64_t(*t.micro_batch_size) * dp) == 0,
        "--eval-global-batch-size {} must be a multiple of --micro-batch-size {} x data-parallel size {}: gptrain "
        "runs evaluation in micro-batches of --micro-batch-size",
        gbs, *t.micro_batch_size, dp);
  t.eval_micro_batch_size = mbs;
  t.eval_global_batch_size = gbs;
}

void validate_batch_schedule(TrainArgs& a) {
  TrainingArgs& t = a.training;
  const bool ramp = !t.rampup_batch_size.empty(), steps = t.step_batch_size_schedule.has_value();
  check(!(ramp && steps), "--rampup-batch-size and --step-batch-size-schedule exclude each other");
  if (steps)
    check(t.train_samples.has_value(),
          "--step-batch-size-schedule needs sample-based training (--train-samples), not --train-iters");
  // Megatron's validate_args refuses a ramp with --train-iters, yet its own GPT-3 example passes the pair;
  // the loop is defined for it all the same, so gptrain runs it (and says how).
  if (ramp && t.train_iters)
    log::info(
        "--rampup-batch-size with --train-iters (a pair Megatron refuses): {} iterations, each of the ramp's batch "
        "for the samples consumed before it; the LR schedule counts samples (--lr-decay-iters x "
        "--global-batch-size)",
        *t.train_iters);
  if (steps) {
    check(!t.global_batch_size,
          "--step-batch-size-schedule and --global-batch-size exclude each other: the schedule's last batch size is "
          "the global batch size");
    t.global_batch_size =
        schedule::parse_step_batch_size_schedule(*t.step_batch_size_schedule, *a.model.seq_length).back().batch_size;
  }
  if (!t.global_batch_size) t.global_batch_size = int64_t(*t.micro_batch_size) * a.data_parallel_size;
  const auto batches = schedule::GlobalBatchSchedule::from_args(t, a.data_parallel_size, *a.model.seq_length);
  // Every batch of a fresh run must divide (or round to > 0); a resumed run is checked as it goes, from its
  // checkpoint's consumed samples, as Megatron does.
  if (batches.varies() && !a.checkpoint.load)
    batches.samples_consumed(t.train_iters ? *t.train_iters : batches.train_iters(*t.train_samples));
  a.num_micro_batches = batches.max_num_micro_batches();
  validate_eval_batch(a);
}

// Megatron starts the profile at the top of the iteration whose completed count is --profile-step-start
// and stops it once --profile-step-end iterations are complete; a window that cannot open, or ranks
// outside the job, are refused instead of profiling nothing.
void validate_profile(const LoggingArgs& l, int world_size) {
  if (!l.profile) {
    if (l.profile_step_start != 10 || l.profile_step_end != 12 || l.profile_ranks != std::vector<int>{0})
      log::warn("--profile-step-start/--profile-step-end/--profile-ranks have no effect without --profile");
    return;
  }
  check(l.profile_step_start >= 0, "--profile-step-start must be >= 0 (got {})", l.profile_step_start);
  check(l.profile_step_end > l.profile_step_start,
        "--profile-step-end ({}) must be greater than --profile-step-start ({}): the profile covers iterations "
        "[start, end)",
        l.profile_step_end, l.profile_step_start);
  check(!l.profile_ranks.empty(), "--profile-ranks needs at least one rank");
  for (int r : l.profile_ranks)
    check(r >= 0 && r < world_size, "--profile-ranks: rank {} is outside the job's ranks 0..{}", r, world_size - 1);
}

}  // namespace

namespace {

// The model's architecture, built and checked once (whole_model), and the flags about it.
void build_architecture(TrainArgs& a) {
  validate_model_flags(a.model, a.training);
  static_cast<ModelConfig&>(a.whole_model) = architecture_from_flags(a.model, a.moe);
  // As Megatron, the derived widths are written back into the flags (the checkpoint's "args" record them).
  a.model.kv_channels = a.whole_model.kv_channels;
  a.model.ffn_hidden_size = a.whole_model.ffn_hidden_size;
  // Megatron asserts the same: expert parallelism splits the experts of an MoE model.
  const int ep = a.parallel.expert_model_parallel_size;
  check(ep == 1 || a.moe.num_experts.has_value(), "--expert-model-parallel-size {} needs --num-experts (an MoE model)",
        ep);
  // Megatron seeds NumPy with it, which takes only [0, 2^32).
  check(a.training.seed >= 0 && a.training.seed <= int64_t(0xFFFFFFFF), "--seed must be in [0, 2^32) (got {})",
        a.training.seed);
}

void validate_backend_and_tokenizer(const TrainArgs& a) {
  // Megatron's unfused/local run attention as separate softmax/matmul ops with the (T, T) scores in
  // memory; gptrain has only fused (flash-style or cuDNN) attention.
  const std::string& ab = a.backend.attention_backend;
  check(ab != "unfused" && ab != "local",
        "--attention-backend {}: gptrain has no unfused attention (the (T, T) score matrix is never stored); "
        "use auto, fused (cuDNN) or flash",
        ab);
  parse_attention_backend(ab);  // throws naming the accepted values
  const std::optional<std::string>& pattern = a.tokenizer.tiktoken_pattern;
  check(!pattern || *pattern == "v1" || *pattern == "v2", "--tiktoken-pattern {}: expected v1 or v2",
        pattern.value_or(""));
  if (pattern && a.tokenizer.tokenizer_type != "TikTokenizer")
    log::info("--tiktoken-pattern {}: read by TikTokenizer only; --tokenizer-type {} ignores it (as Megatron)",
              *a.tokenizer.tiktoken_pattern, a.tokenizer.tokenizer_type);
}

// The process layout, then how the run uses the model and where its first rank sits: whole_model's stage
// rules (StageConfig::check_stage).
void build_layout_and_stage(TrainArgs& a, int world_size) {
  ParallelArgs& p = a.parallel;
  apply_megatron_fsdp(p);
  validate_parallel_args(p);
  const int tp = p.tensor_model_parallel_size, pp = p.pipeline_model_parallel_size, cp = p.context_parallel_size;
  check(world_size % (tp * pp * cp) == 0, "world size {} is not divisible by TP ({}) x PP ({}) x CP ({})", world_size,
        tp, pp, cp);
  a.data_parallel_size = world_size / (tp * pp * cp);
  if (p.sequence_parallel && tp == 1) {
    log::warn("--sequence-parallel with --tensor-model-parallel-size 1 has no effect; turning it off (as Megatron)");
    p.sequence_parallel = false;
  }
  StageConfig& whole = a.whole_model;
  whole.micro_batch_size = *a.training.micro_batch_size;
  whole.seed = uint64_t(a.training.seed);
  whole.recompute = recompute_config_from_args(a.recompute, whole.num_layers);
  whole.cpu_offload_layers = cpu_offload_layers_from_args(a.activation_offload);
  whole.fp8 = fp8_config_from_args(a);
  whole.tp_size = tp;
  whole.sequence_parallel = p.sequence_parallel;
  whole.ep_size = p.expert_model_parallel_size;
  whole.etp_size = a.moe.num_experts ? expert_tensor_parallel_size(p) : 1;
  whole.cp_size = cp;
  check(cp == 1 || !a.data.reset_attention_mask,
        "--reset-attention-mask with --context-parallel-size {} is not supported yet (document masks across CP chunks)",
        cp);
  whole.check_stage();
}

void validate_checkpoint_eval_logging(const TrainArgs& a, int world_size) {
  const CheckpointArgs& c = a.checkpoint;
  const TrainingArgs& t = a.training;
  if (c.save) check(c.save_interval.has_value() && *c.save_interval > 0, "--save needs --save-interval > 0");
  check(!c.save_interval || *c.save_interval > 0, "--save-interval must be > 0");
  if (c.save && c.save_retain_interval) {  // Megatron checks it only with --save
    check(*c.save_retain_interval > 0, "--save-retain-interval must be > 0 (got {})", *c.save_retain_interval);
    check(*c.save_retain_interval % *c.save_interval == 0,
          "--save-retain-interval {} must be a multiple of --save-interval {}", *c.save_retain_interval,
          *c.save_interval);
  }
  check(!t.eval_interval || *t.eval_interval > 0, "--eval-interval must be > 0");
  check(!t.start_eval_at_iter || *t.start_eval_at_iter >= 0, "--start-eval-at-iter must be >= 0 (got {})",
        t.start_eval_at_iter.value_or(0));
  check(t.eval_iters >= 0, "--eval-iters must be >= 0");
  check(a.logging.log_interval > 0, "--log-interval must be > 0");
  check(a.logging.timing_log_level >= 0 && a.logging.timing_log_level <= 2,
        "--timing-log-level must be 0, 1 or 2 (got {})", a.logging.timing_log_level);
  check(!t.exit_interval || *t.exit_interval > 0, "--exit-interval must be > 0");
  check(!t.check_weight_hash_across_dp_replicas_interval || *t.check_weight_hash_across_dp_replicas_interval > 0,
        "--check-weight-hash-across-dp-replicas-interval must be > 0");
  check(!t.exit_duration_in_mins || *t.exit_duration_in_mins > 0, "--exit-duration-in-mins must be > 0");
  check(!(c.finetune && !c.load), "--finetune needs --load");
  check(!c.ckpt_step || c.load, "--ckpt-step needs --load");
  check(!c.ckpt_step || *c.ckpt_step >= 0, "--ckpt-step must be >= 0 (an iteration number), got {}", *c.ckpt_step);
  check(!c.ckpt_fallback_to_intact || c.load, "--ckpt-fallback-to-intact needs --load");
  if (c.non_persistent_ckpt_type)
    check(*c.non_persistent_ckpt_type == "global",
          "--non-persistent-ckpt-type {}: gptrain implements global only (local needs node-local storage and "
          "NVIDIA's resiliency extension in Megatron; in_memory is not implemented)",
          *c.non_persistent_ckpt_type);
  if (c.non_persistent_save_interval) {
    check(*c.non_persistent_save_interval > 0, "--non-persistent-save-interval must be > 0 (got {})",
          *c.non_persistent_save_interval);
    check(c.non_persistent_ckpt_type.has_value(),
          "--non-persistent-save-interval needs --non-persistent-ckpt-type global (as Megatron, which has no "
          "default type)");
    check(c.save.has_value(), "--non-persistent-save-interval needs --save (saving is off without it)");
  }
  validate_profile(a.logging, world_size);
}

// --data-args-path / --per-split-data-args-path: the lists read from their files, each excluding the flags
// it stands for (as Megatron). --split has no default with a data-args file: Megatron supplies one only
// to --data-path.
void read_data_args_files(DataArgs& d) {
  if (d.data_args_path) {
    check(d.data_path.empty(), "--data-path and --data-args-path exclude each other (give the list in one place)");
    check(d.split.has_value(),
          "--data-args-path needs --split (Megatron supplies the default \"969, 30, 1\" to --data-path only)");
    d.data_path = read_data_args_file(*d.data_args_path);
  }
  if (d.per_split_data_args_path) {
    check(d.train_data_path.empty() && d.valid_data_path.empty() && d.test_data_path.empty(),
          "--per-split-data-args-path excludes --train-data-path, --valid-data-path and --test-data-path");
    check(!d.data_args_path, "--data-args-path and --per-split-data-args-path exclude each other");
    read_per_split_data_args(*d.per_split_data_args_path, d);
  }
}

// As Megatron: evaluation only needs no optimizer state.
void validate_skip_train(TrainArgs& a) {
  if (!a.training.skip_train || a.checkpoint.no_load_optim) return;
  a.checkpoint.no_load_optim = true;
  log::warn("enabling --no-load-optim when skipping training (--skip-train)");
}

// --moe-use-upcycling, as Megatron: the dense run's optimizer and RNG state do not fit the MoE model, so
// neither is loaded; granularity 1 copies the whole dense MLP into each expert, so the widths must agree.
void validate_upcycling(TrainArgs& a) {
  if (!a.moe.moe_use_upcycling) return;
  const ModelConfig& c = a.whole_model;
  check(c.moe.enabled(), "--moe-use-upcycling needs --num-experts (the MoE model the dense checkpoint becomes)");
  check(a.checkpoint.load.has_value(), "--moe-use-upcycling needs --load (the dense checkpoint to upcycle)");
  check(a.checkpoint.save.has_value(),
        "--moe-use-upcycling needs --save (as Megatron: where the upcycled MoE model is saved)");
  check(c.moe.shared_expert_intermediate_size == 0,
        "--moe-use-upcycling with --moe-shared-expert-intermediate-size is not implemented (the shared expert has "
        "no dense counterpart to copy)");
  check(c.moe.ffn_hidden_size == 0 || c.moe.ffn_hidden_size == c.ffn_hidden_size,
        "--moe-use-upcycling: --moe-ffn-hidden-size {} must equal --ffn-hidden-size {} (granularity 1: each expert "
        "is a whole copy of the dense MLP)",
        c.moe.ffn_hidden_size, c.ffn_hidden_size);
  if (!a.checkpoint.no_load_optim) {
    a.checkpoint.no_load_optim = true;
    log::warn("enabling --no-load-optim for upcycling (--moe-use-upcycling)");
  }
  if (!a.checkpoint.no_load_rng) {
    a.checkpoint.no_load_rng = true;
    log::warn("enabling --no-load-rng for upcycling (--moe-use-upcycling)");
  }
}

void validate_data(TrainArgs& a) {
  read_data_args_files(a.data);
  // As Megatron, which keeps no consumed validation samples per set.
  check(!a.data.multiple_validation_sets || a.training.full_validation,
        "--multiple-validation-sets needs --full-validation (as Megatron: each set is evaluated whole)");
  check(a.data.validation_set_names.empty() || a.data.multiple_validation_sets,
        "--validation-set-names needs --multiple-validation-sets");
  const DataArgs& d = a.data;
  check(d.mock_data || a.dry_run || !d.data_path.empty() || !d.train_data_path.empty(),
        "no data: give --data-path (or --train-data-path), or --mock-data");
  check(!(d.mock_data && (!d.data_path.empty() || !d.train_data_path.empty())),
        "--mock-data and --data-path/--train-data-path exclude each other");
  check(!(!d.data_path.empty() && !d.train_data_path.empty()),
        "--data-path and --train-data-path exclude each other (per-split paths replace --split)");
  // A negative surplus would build fewer samples per blended dataset than the blend then reads.
  check(d.mid_level_dataset_surplus >= 0 && std::isfinite(d.mid_level_dataset_surplus),
        "--mid-level-dataset-surplus must be a finite number >= 0 (got {})", d.mid_level_dataset_surplus);
  if (!d.data_path.empty() && !d.split) a.data.split = "969, 30, 1";
}

}  // namespace

void validate_train_args(TrainArgs& a, int world_size) {
  // Megatron's deprecated --optimizer dist_muon: Muon with its layer-wise distributed optimizer.
  if (a.parallel.optimizer == "dist_muon") {
    log::warn(
        "--optimizer dist_muon is deprecated (as in Megatron): running --optimizer muon "
        "--use-distributed-optimizer");
    a.parallel.optimizer = "muon";
    a.parallel.use_distributed_optimizer = true;
  }
  build_architecture(a);
  validate_backend_and_tokenizer(a);
  validate_precision(a.precision);
  check(!(a.parallel.bf16_stochastic_rounding && a.precision.fp16),
        "--bf16-stochastic-rounding keeps bf16 parameters: not with --fp16 (use --bf16)");
  a.params_dtype = a.precision.fp16 ? DType::F16 : a.precision.bf16 ? DType::BF16 : DType::F32;
  build_layout_and_stage(a, world_size);
  validate_schedule(a.schedule, a.training, a.optimizer);
  validate_optimizer_choice(a);
  validate_batch_schedule(a);
  validate_checkpoint_eval_logging(a, world_size);
  validate_skip_train(a);
  validate_upcycling(a);
  validate_data(a);
}

StageConfig stage_config_from_args(const TrainArgs& a, int vocab_size) {
  StageConfig c = a.whole_model;
  c.vocab_size = vocab_size;
  c.finalize(a.model.make_vocab_size_divisible_by);
  return c;
}

MoeConfig moe_config_from_args(const MoeArgs& a, int num_layers) {
  MoeConfig m;
  if (!a.num_experts) return m;
  check(*a.num_experts >= 1, "--num-experts must be >= 1 (got {})", *a.num_experts);
  m.num_experts = *a.num_experts;
  m.layer_pattern = moe_layer_pattern(a.moe_layer_freq, num_layers);
  m.topk = a.moe_router_topk;
  m.balance = parse_moe_balance(a.moe_router_load_balancing_type);
  check(a.moe_aux_loss_coeff >= 0.0, "--moe-aux-loss-coeff must be >= 0 (got {})", a.moe_aux_loss_coeff);
  m.aux_loss_coeff = float(a.moe_aux_loss_coeff);
  check(!m.sinkhorn() || m.aux_loss_coeff == 0.0f,
        "--moe-router-load-balancing-type sinkhorn takes no load-balancing loss: set --moe-aux-loss-coeff 0 (got {})",
        a.moe_aux_loss_coeff);
  if (a.moe_z_loss_coeff) {
    check(*a.moe_z_loss_coeff >= 0.0, "--moe-z-loss-coeff must be >= 0 (got {})", *a.moe_z_loss_coeff);
    m.z_loss_coeff = float(*a.moe_z_loss_coeff);
  }
  m.score = parse_moe_score(a.moe_router_score_function);
  m.pre_softmax = a.moe_router_pre_softmax;
  if (a.moe_router_topk_scaling_factor) {
    check(*a.moe_router_topk_scaling_factor > 0.0, "--moe-router-topk-scaling-factor must be > 0 (got {})",
          *a.moe_router_topk_scaling_factor);
    m.topk_scaling_factor = float(*a.moe_router_topk_scaling_factor);
  }
  if (a.moe_ffn_hidden_size) {
    check(*a.moe_ffn_hidden_size >= 1, "--moe-ffn-hidden-size must be >= 1 (got {})", *a.moe_ffn_hidden_size);
    m.ffn_hidden_size = *a.moe_ffn_hidden_size;
  }
  if (a.moe_shared_expert_intermediate_size) {
    check(*a.moe_shared_expert_intermediate_size >= 1, "--moe-shared-expert-intermediate-size must be >= 1 (got {})",
          *a.moe_shared_expert_intermediate_size);
    m.shared_expert_intermediate_size = *a.moe_shared_expert_intermediate_size;
  }
  m.shared_expert_gate = a.moe_shared_expert_gate;  // needs the shared expert: check_moe
  if (a.moe_expert_capacity_factor) m.capacity_factor = *a.moe_expert_capacity_factor;  // > 0: check_moe
  m.drop_policy = parse_moe_drop_policy(a.moe_token_drop_policy);
  m.pad_to_capacity = a.moe_pad_expert_input_to_capacity;
  m.expert_bias = a.moe_router_enable_expert_bias;
  check(a.moe_router_bias_update_rate >= 0.0 && std::isfinite(a.moe_router_bias_update_rate),
        "--moe-router-bias-update-rate must be >= 0 (got {})", a.moe_router_bias_update_rate);
  m.bias_update_rate = float(a.moe_router_bias_update_rate);
  if (a.moe_router_num_groups) {
    check(*a.moe_router_num_groups >= 1, "--moe-router-num-groups must be >= 1 (got {})", *a.moe_router_num_groups);
    m.num_groups = *a.moe_router_num_groups;
  }
  if (a.moe_input_jitter_eps) {
    check(*a.moe_input_jitter_eps >= 0.0 && *a.moe_input_jitter_eps < 1.0,
          "--moe-input-jitter-eps must be in [0, 1) (got {})", *a.moe_input_jitter_eps);
    m.input_jitter_eps = float(*a.moe_input_jitter_eps);
  }
  if (a.moe_router_group_topk) {
    check(*a.moe_router_group_topk >= 1, "--moe-router-group-topk must be >= 1 (got {})", *a.moe_router_group_topk);
    m.group_topk = *a.moe_router_group_topk;
  }
  return m;
}

}  // namespace gptrain
