// Parsing, Megatron's validate_args consistency checks, and the model config derived from the flags.
#include "core/config/train_args.h"

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/config/flag_table.h"
#include "kernels/backend.h"

#include <cstdlib>

namespace gptrain {

FlagTable train_flag_table(TrainArgs& a);  // train_flags.cpp

TrainArgs parse_train_args(int argc, const char* const* argv, int world_size) {
  TrainArgs a;
  FlagTable t = train_flag_table(a);
  if (!t.parse("pretrain_gpt", argc, argv)) std::exit(0);  // --help printed
  if (a.dry_run_world_size) {
    check(a.dry_run, "--dry-run-world-size needs --dry-run");
    check(world_size == 1, "--dry-run-world-size {}: this job already has {} processes; drop the flag under mpirun",
          *a.dry_run_world_size, world_size);
    check(*a.dry_run_world_size >= 1, "--dry-run-world-size must be >= 1 (got {})", *a.dry_run_world_size);
  }
  if (a.dry_run && world_size == 1)
    world_size = a.dry_run_world_size.value_or(a.tensor_model_parallel_size * a.pipeline_model_parallel_size);
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

}  // namespace

void validate_train_args(TrainArgs& a, int world_size) {
  // ---- model ----
  required(a.num_layers, "num-layers");
  required(a.hidden_size, "hidden-size");
  required(a.num_attention_heads, "num-attention-heads");
  required(a.seq_length, "seq-length");
  required(a.micro_batch_size, "micro-batch-size");
  check(*a.num_layers > 0 && *a.hidden_size > 0 && *a.num_attention_heads > 0 && *a.seq_length > 0 &&
            *a.micro_batch_size > 0,
        "--num-layers, --hidden-size, --num-attention-heads, --seq-length and --micro-batch-size must be > 0");
  if (!a.max_position_embeddings) {
    check(a.position_embedding_type != "learned_absolute",
          "--max-position-embeddings is required with --position-embedding-type learned_absolute");
    a.max_position_embeddings = *a.seq_length;
  }
  check(*a.max_position_embeddings >= *a.seq_length, "--max-position-embeddings ({}) must be >= --seq-length ({})",
        *a.max_position_embeddings, *a.seq_length);
  if (!a.group_query_attention) a.num_query_groups = *a.num_attention_heads;
  check(a.num_query_groups > 0 && *a.num_attention_heads % a.num_query_groups == 0,
        "--num-attention-heads ({}) must be divisible by --num-query-groups ({})", *a.num_attention_heads,
        a.num_query_groups);
  if (!a.kv_channels) {
    check(*a.hidden_size % *a.num_attention_heads == 0,
          "--hidden-size ({}) must be divisible by --num-attention-heads ({}) (or give --kv-channels)", *a.hidden_size,
          *a.num_attention_heads);
    a.kv_channels = *a.hidden_size / *a.num_attention_heads;
  }
  if (!a.ffn_hidden_size) a.ffn_hidden_size = a.swiglu ? (8 * *a.hidden_size / 3 / 64) * 64 : 4 * *a.hidden_size;
  check(a.output_layer_bias == false || a.untie_embeddings_and_output_weights,
        "--output-layer-bias needs --untie-embeddings-and-output-weights");
  check(!(a.swiglu && !a.gelu.empty()), "--gelu and --swiglu exclude each other (SwiGLU has no GELU)");

  // ---- kernels ----
  // Megatron's unfused/local run attention as separate softmax/matmul ops with the (T, T) scores in
  // memory; gptrain has only fused (flash-style or cuDNN) attention.
  check(a.attention_backend != "unfused" && a.attention_backend != "local",
        "--attention-backend {}: gptrain has no unfused attention (the (T, T) score matrix is never stored); "
        "use auto, fused (cuDNN) or flash", a.attention_backend);
  parse_attention_backend(a.attention_backend);  // throws naming the accepted values

  // ---- precision ----
  check(!(a.fp16 && a.bf16), "--fp16 and --bf16 exclude each other");
  a.params_dtype = a.fp16 ? DType::F16 : a.bf16 ? DType::BF16 : DType::F32;
  check(!a.loss_scale || a.fp16, "--loss-scale applies to --fp16 only");
  check(!a.loss_scale || *a.loss_scale > 0, "--loss-scale must be > 0");
  check(a.initial_loss_scale > 0 && a.min_loss_scale > 0 && a.min_loss_scale <= a.initial_loss_scale,
        "need 0 < --min-loss-scale ({}) <= --initial-loss-scale ({})", a.min_loss_scale, a.initial_loss_scale);
  check(a.loss_scale_window > 0, "--loss-scale-window must be > 0");
  check(a.hysteresis >= 1, "--hysteresis must be >= 1");

  // ---- parallel layout and batch ----
  const int tp = a.tensor_model_parallel_size, pp = a.pipeline_model_parallel_size;
  check(tp >= 1 && pp >= 1, "--tensor-model-parallel-size and --pipeline-model-parallel-size must be >= 1");
  check(a.context_parallel_size == 1, "--context-parallel-size {}: context parallelism is not implemented (only 1)",
        a.context_parallel_size);
  check(world_size % (tp * pp) == 0, "world size {} is not divisible by TP ({}) x PP ({})", world_size, tp, pp);
  a.data_parallel_size = world_size / (tp * pp);
  if (a.sequence_parallel && tp == 1) {
    log::warn("--sequence-parallel with --tensor-model-parallel-size 1 has no effect; turning it off (as Megatron)");
    a.sequence_parallel = false;
  }
  check(!a.ddp_bucket_size || *a.ddp_bucket_size >= 1, "--ddp-bucket-size must be >= 1 element, got {}",
        a.ddp_bucket_size.value_or(0));
  check(!a.overlap_param_gather || (a.use_distributed_optimizer && a.overlap_grad_reduce),
        "--overlap-param-gather needs --use-distributed-optimizer and --overlap-grad-reduce (as Megatron)");
  const int64_t mbs = *a.micro_batch_size;
  if (!a.global_batch_size) a.global_batch_size = mbs * a.data_parallel_size;
  check(*a.global_batch_size > 0 && *a.global_batch_size % (mbs * a.data_parallel_size) == 0,
        "--global-batch-size ({}) must be divisible by --micro-batch-size ({}) x data-parallel size ({})",
        *a.global_batch_size, mbs, a.data_parallel_size);
  a.num_micro_batches = int(*a.global_batch_size / (mbs * a.data_parallel_size));

  // ---- duration and schedule ----
  check(a.train_iters.has_value() != a.train_samples.has_value(), "exactly one of --train-iters and --train-samples is required");
  if (a.train_iters) {
    check(*a.train_iters > 0, "--train-iters must be > 0");
    check(!a.lr_decay_samples && a.lr_warmup_samples == 0 && !a.lr_wsd_decay_samples,
          "with --train-iters use --lr-decay-iters / --lr-warmup-iters / --lr-wsd-decay-iters, not the *-samples forms");
  } else {
    check(*a.train_samples > 0, "--train-samples must be > 0");
    check(!a.lr_decay_iters && a.lr_warmup_iters == 0 && !a.lr_wsd_decay_iters,
          "with --train-samples use --lr-decay-samples / --lr-warmup-samples / --lr-wsd-decay-samples, not the *-iters forms");
  }
  required(a.lr, "lr");
  check(*a.lr >= 0 && a.min_lr >= 0 && a.min_lr <= *a.lr, "need 0 <= --min-lr ({}) <= --lr ({})", a.min_lr, *a.lr);
  check(!(a.lr_warmup_fraction && (a.lr_warmup_iters > 0 || a.lr_warmup_samples > 0)),
        "--lr-warmup-fraction and --lr-warmup-iters/--lr-warmup-samples exclude each other");
  check(!a.lr_warmup_fraction || (*a.lr_warmup_fraction >= 0 && *a.lr_warmup_fraction <= 1),
        "--lr-warmup-fraction must be in [0, 1]");
  check(!(a.override_opt_param_scheduler && a.use_checkpoint_opt_param_scheduler),
        "--override-opt-param-scheduler and --use-checkpoint-opt-param-scheduler exclude each other");
  if (a.lr_decay_style == "WSD")
    check(a.lr_wsd_decay_iters.has_value() || a.lr_wsd_decay_samples.has_value(),
          "--lr-decay-style WSD needs --lr-wsd-decay-iters (or --lr-wsd-decay-samples)");
  if (a.weight_decay_incr_style == "constant") {
    check(!a.start_weight_decay && !a.end_weight_decay,
          "--start-weight-decay/--end-weight-decay need --weight-decay-incr-style linear or cosine");
  } else {
    check(a.start_weight_decay && a.end_weight_decay,
          "--weight-decay-incr-style {} needs --start-weight-decay and --end-weight-decay", a.weight_decay_incr_style);
  }
  check(a.clip_grad >= 0, "--clip-grad must be >= 0");
  check(a.adam_beta1 >= 0 && a.adam_beta1 < 1 && a.adam_beta2 >= 0 && a.adam_beta2 < 1 && a.adam_eps > 0,
        "Adam needs 0 <= beta1, beta2 < 1 and eps > 0");
  check(a.hidden_dropout >= 0 && a.hidden_dropout < 1 && a.attention_dropout >= 0 && a.attention_dropout < 1,
        "dropout probabilities must be in [0, 1)");

  // ---- checkpoints / eval / logging ----
  if (a.save) check(a.save_interval.has_value() && *a.save_interval > 0, "--save needs --save-interval > 0");
  check(!a.save_interval || *a.save_interval > 0, "--save-interval must be > 0");
  check(!a.eval_interval || *a.eval_interval > 0, "--eval-interval must be > 0");
  check(a.eval_iters >= 0, "--eval-iters must be >= 0");
  check(a.log_interval > 0, "--log-interval must be > 0");
  check(!a.exit_interval || *a.exit_interval > 0, "--exit-interval must be > 0");
  check(!(a.finetune && !a.load), "--finetune needs --load");
  check(!a.ckpt_step || a.load, "--ckpt-step needs --load");

  // ---- data ----
  check(a.mock_data || a.dry_run || !a.data_path.empty() || !a.train_data_path.empty(),
        "no data: give --data-path (or --train-data-path), or --mock-data");
  check(!(a.mock_data && (!a.data_path.empty() || !a.train_data_path.empty())),
        "--mock-data and --data-path/--train-data-path exclude each other");
  check(!(!a.data_path.empty() && !a.train_data_path.empty()),
        "--data-path and --train-data-path exclude each other (per-split paths replace --split)");
  if (!a.data_path.empty() && !a.split) a.split = "969, 30, 1";
}

ModelConfig model_config_from_args(const TrainArgs& a, int vocab_size) {
  ModelConfig c;
  c.num_layers = *a.num_layers;
  c.hidden_size = *a.hidden_size;
  c.num_attention_heads = *a.num_attention_heads;
  c.num_query_groups = a.num_query_groups;
  c.kv_channels = *a.kv_channels;
  c.ffn_hidden_size = *a.ffn_hidden_size;
  c.seq_length = *a.seq_length;
  c.max_position_embeddings = *a.max_position_embeddings;
  c.vocab_size = vocab_size;
  c.normalization = parse_normalization(a.normalization);
  c.norm_epsilon = float(a.norm_epsilon);
  c.position_embedding = parse_position_embedding(a.position_embedding_type);
  c.rotary_percent = float(a.rotary_percent);
  c.rotary_base = float(a.rotary_base);
  c.rotary_interleaved = a.rotary_interleaved;
  c.swiglu = a.swiglu;
  c.add_bias_linear = !a.disable_bias_linear;
  c.add_qkv_bias = a.add_qkv_bias;
  c.disable_bias_attention = a.disable_bias_attention;
  // Megatron: the fused bias-GELU kernel is the tanh approximation; without fusion (or without a
  // bias to fuse) the MLP calls F.gelu, the exact erf form.
  if (a.gelu.empty())
    c.gelu = (!a.no_bias_gelu_fusion && c.add_bias_linear) ? GeluKind::Tanh : GeluKind::Erf;
  else
    c.gelu = a.gelu == "tanh" ? GeluKind::Tanh : GeluKind::Erf;
  c.untie_embeddings_and_output_weights = a.untie_embeddings_and_output_weights;
  c.output_layer_bias = a.output_layer_bias;
  c.parallel_residual = parse_parallel_residual(a.parallel_residual);
  c.hidden_dropout = float(a.hidden_dropout);
  c.attention_dropout = float(a.attention_dropout);
  c.init_method_std = float(a.init_method_std);
  c.seed = uint64_t(a.seed);
  c.micro_batch_size = *a.micro_batch_size;
  c.tp_size = a.tensor_model_parallel_size;
  c.sequence_parallel = a.sequence_parallel;
  c.finalize(a.make_vocab_size_divisible_by);
  return c;
}

}  // namespace gptrain
