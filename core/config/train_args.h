// Every pretrain_gpt setting in one struct, named after Megatron's flags (--foo-bar -> foo_bar) with
// Megatron's defaults (../shared/docs/megatron-compat.md §3). Unset optional flags are std::nullopt
// ("None" in Megatron); parse_train_args fills derived values (validate_args' arrows).
#pragma once

#include "core/model/model_config.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gptrain {

struct TrainArgs {
  // ---- model shape ----
  std::optional<int> num_layers, hidden_size, ffn_hidden_size, num_attention_heads, kv_channels;
  bool group_query_attention = false;
  int num_query_groups = 1;
  std::optional<int> seq_length, max_position_embeddings;
  std::string position_embedding_type = "learned_absolute";
  double rotary_base = 10000, rotary_percent = 1.0;
  bool rotary_interleaved = false;
  std::string normalization = "LayerNorm";
  double norm_epsilon = 1e-5;
  bool swiglu = false;
  bool disable_bias_linear = false;
  bool add_qkv_bias = false;
  bool untie_embeddings_and_output_weights = false;
  int make_vocab_size_divisible_by = 128;
  std::optional<int> vocab_size;
  bool no_bias_gelu_fusion = false;  // Megatron: the unfused MLP uses exact (erf) GELU
  // gptrain switches (no Megatron flag): residual form, explicit GELU variant, GPT-J lm_head bias,
  // GPT-J's bias layout (no qkv / attention output biases, MLP biases kept).
  std::string parallel_residual = "none";
  std::string gelu;  // "" = Megatron's choice (tanh with bias-GELU fusion and biases, else erf)
  bool output_layer_bias = false;
  bool disable_bias_attention = false;

  // ---- regularization / init ----
  double hidden_dropout = 0.1, attention_dropout = 0.1;
  double weight_decay = 0.01;
  std::optional<double> start_weight_decay, end_weight_decay;
  std::string weight_decay_incr_style = "constant";
  double clip_grad = 1.0;
  double init_method_std = 0.02;
  int64_t seed = 1234;

  // ---- parallelism (applied by parallel/, world = TP x PP x DP) ----
  int tensor_model_parallel_size = 1, pipeline_model_parallel_size = 1;
  bool sequence_parallel = false;
  bool use_distributed_optimizer = false;
  bool overlap_grad_reduce = false;      // DP gradient buckets reduced during backward
  bool overlap_param_gather = false;     // distributed optimizer: parameter gathers finish during forward
  std::optional<int64_t> ddp_bucket_size;  // elements per DP gradient bucket (default max(40M, 1M x DP))
  std::optional<int> num_layers_per_virtual_pipeline_stage;
  std::optional<int> decoder_first_pipeline_num_layers, decoder_last_pipeline_num_layers;
  int context_parallel_size = 1;
  double distributed_timeout_minutes = 10.0;  // a collective waiting longer ends the job (parallel/)

  // ---- batch ----
  std::optional<int> micro_batch_size;
  std::optional<int64_t> global_batch_size;

  // ---- duration / LR schedule ----
  std::optional<int64_t> train_iters, train_samples;
  std::optional<double> lr;
  double min_lr = 0.0;
  std::string lr_decay_style = "linear";
  std::optional<int64_t> lr_decay_iters, lr_decay_samples;
  int64_t lr_warmup_iters = 0, lr_warmup_samples = 0;
  std::optional<double> lr_warmup_fraction;
  double lr_warmup_init = 0.0;
  std::string lr_wsd_decay_style = "exponential";
  std::optional<int64_t> lr_wsd_decay_iters, lr_wsd_decay_samples;
  bool override_opt_param_scheduler = false, use_checkpoint_opt_param_scheduler = false;

  // ---- optimizer ----
  std::string optimizer = "adam";
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_eps = 1e-8;

  // ---- mixed precision ----
  bool fp16 = false, bf16 = false;
  std::optional<double> loss_scale;
  double initial_loss_scale = 4294967296.0, min_loss_scale = 1.0;
  int loss_scale_window = 1000, hysteresis = 2;

  // ---- checkpointing ----
  std::optional<std::string> save, load;
  std::optional<int> save_interval;
  bool no_save_optim = false, no_save_rng = false, no_load_optim = false, no_load_rng = false, finetune = false;
  std::optional<int64_t> ckpt_step;
  std::optional<int64_t> exit_interval;
  std::optional<double> exit_duration_in_mins;

  // ---- logging ----
  int log_interval = 100;
  bool log_throughput = false;
  std::optional<std::string> tensorboard_dir;
  std::optional<std::string> metrics_file;  // gptrain: JSONL, one object per logged iteration / eval

  // ---- evaluation ----
  std::optional<int> eval_interval;
  int eval_iters = 100;

  // ---- data (handed to data/ as DataArgs) ----
  std::vector<std::string> data_path;
  std::optional<std::string> split;
  std::vector<std::string> train_data_path, valid_data_path, test_data_path;
  std::optional<std::string> data_cache_path;
  bool mock_data = false;
  double mid_level_dataset_surplus = 0.005;
  int num_workers = 2;  // accepted for compatibility: gptrain's loader reads in the training thread
  std::string dataloader_type = "single";
  bool reset_position_ids = false, reset_attention_mask = false, eod_mask_loss = false;
  bool no_create_attention_mask_in_dataloader = false;  // gptrain never materialises masks

  // ---- tokenizer ----
  std::string tokenizer_type = "GPT2BPETokenizer";
  std::optional<std::string> vocab_file, merge_file, tokenizer_model;

  // ---- gptrain ----
  std::string device = "auto";  // auto | cpu | cuda
  // Megatron's --attention-backend: auto | flash | fused (cuDNN) on CUDA; unfused/local are rejected.
  std::string attention_backend = "auto";
  bool deterministic_mode = false;  // same bits run to run (the CPU backend always is)
  std::optional<std::string> config;  // --config run.yaml (already applied)
  // --dry-run: validate, print the parameter counts and the per-rank memory plan, exit 0; no model is
  // allocated and no data read. A single process plans for --dry-run-world-size processes (default
  // TP x PP); under mpirun the job's world size is used.
  bool dry_run = false;
  std::optional<int> dry_run_world_size;

  // ---- derived by parse_train_args ----
  int data_parallel_size = 1;       // world / (TP * PP)
  int num_micro_batches = 1;        // global_batch_size / (micro_batch_size * DP)
  DType params_dtype = DType::F32;  // from --bf16 / --fp16
};

// Parses argv (and --config YAML, flags win), rejects unknown and unimplemented flags and inconsistent
// combinations with a message naming the flag, fills derived values. world_size: processes in the job.
TrainArgs parse_train_args(int argc, const char* const* argv, int world_size = 1);

// Checks combinations and fills derived values (called by parse_train_args; exposed for tests and
// for programmatic configs).
void validate_train_args(TrainArgs& a, int world_size);

// Every flag's value, Megatron names with underscores (checkpoint metadata "args").
nlohmann::json train_args_to_json(const TrainArgs& a);

// The model configuration of the whole model (TP 1, all layers) for a vocabulary of `vocab_size`
// tokens (from the tokenizer, or --vocab-size). The parallel layer sets tp/pp fields afterwards.
ModelConfig model_config_from_args(const TrainArgs& a, int vocab_size);

}  // namespace gptrain
