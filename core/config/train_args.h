// Every pretrain_gpt setting, composed of one struct per subsystem, each field named after its Megatron
// flag (--foo-bar -> foo_bar) with Megatron's default (docs/megatron-compat.md §3.2). The flags are bound to these
// fields in one table (train_flags.cpp: train_flag_table); every app that takes one of these flags binds it from there,
// and each subsystem reads its own struct. The exception is the model: its flags keep Megatron's spellings and
// legacy switches (strings, optionals, --group-query-attention, --no-bias-gelu-fusion), and validate_train_args
// turns them, once, into the model's typed StageConfig (whole_model), which the model checks itself.
//
//   flag group   struct               read by
//   model        ModelArgs            validate_train_args -> whole_model (ModelConfig, core/model)
//   moe          MoeArgs              validate_train_args -> whole_model (MoeConfig), the log (per-layer)
//   tokenizer    TokenizerArgs        core/train/setup (vocabulary, end-of-document id)
//   data         DataArgs             data/loader (datasets, batches), core/train/setup (mock data)
//   training     TrainingArgs         core/train (the loop, sample counts), core/schedule
//                RecomputeArgs        validate_train_args -> whole_model (StageRun: activation recomputation)
//                ActivationOffloadArgs  validate_train_args -> whole_model (StageRun: activation offloading)
//   schedule     LrScheduleArgs       core/schedule (LR and weight-decay schedules)
//   optimizer    OptimizerArgs        parallel/data_parallel (AdamW), core/train (clipping)
//   precision    MixedPrecisionArgs   core/train (loss scaler), the backend's compute dtype
//   parallel     ParallelArgs         parallel/ (grid, communicators, pipeline, data parallel)
//   backend      BackendArgs          kernels/ (make_backend), parallel/comm (deterministic reductions)
//   checkpoint   CheckpointArgs       core/train (save/load), parallel/train (sharded files)
//   logging      LoggingArgs          core/train, core/metrics
//   run          dry_run, dry_run_world_size (pretrain_gpt --dry-run: parallel/plan)
#pragma once

#include "core/config/checkpoint_args.h"
#include "core/config/model_args.h"
#include "core/config/moe_args.h"
#include "core/config/optimizer_args.h"
#include "core/config/parallel_args.h"
#include "core/config/offload_args.h"
#include "core/config/recompute_args.h"
#include "core/config/training_args.h"
#include "core/model/model_config.h"
#include "core/config/schedule_args.h"
#include "data/loader/gpt_data.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gptrain {

class FlagTable;

struct TrainArgs {
  ModelArgs model;
  MoeArgs moe;
  TokenizerArgs tokenizer;
  DataArgs data;
  TrainingArgs training;
  RecomputeArgs recompute;
  ActivationOffloadArgs activation_offload;
  schedule::LrScheduleArgs schedule;
  OptimizerArgs optimizer;
  MixedPrecisionArgs precision;
  ParallelArgs parallel;
  BackendArgs backend;
  CheckpointArgs checkpoint;
  LoggingArgs logging;
  // --dry-run: validate (flags, data files and blends, --load, --save), print the parameter counts and the
  // per-rank memory plan, exit 0; no model is allocated and no sample index built. A single process plans for
  // --dry-run-world-size processes (default TP x PP); under mpirun the job's world size is used.
  bool dry_run = false;
  std::optional<int> dry_run_world_size;
  std::optional<double> dry_run_device_memory;  // GiB per device the plan must fit (--dry-run only)

  // ---- derived by validate_train_args ----
  int data_parallel_size = 1;       // world / (TP * PP)
  int num_micro_batches = 1;        // global batch / (micro-batch size * DP); the largest with a batch ramp
  DType params_dtype = DType::F32;  // from --bf16 / --fp16
  // The model as one stage at this run's TP size (all layers, rank 0): the architecture, the run's use of it
  // (micro-batch, seed, recomputation, offloading) and the layout's sizes, built from the flags and checked
  // once; stage_config_from_args adds the vocabulary, parallel/ each chunk's placement.
  StageConfig whole_model;
  // --use-checkpoint-args: what it set, for the logging rank to print at start-up.
  std::vector<std::string> checkpoint_args_lines;
};

// The one flag table: every TrainArgs field bound to its flag, plus the Megatron flags gptrain accepts
// without effect (with what it does instead) and the ones it rejects (with the reason).
FlagTable train_flag_table(TrainArgs& a);

// Parses argv (and --config YAML, flags win), rejects unknown and unimplemented flags and inconsistent
// combinations with a message naming the flag, fills derived values. world_size: processes in the job.
// Returns nullopt when --help or --list-flags printed and the app should exit 0.
std::optional<TrainArgs> parse_train_args(int argc, const char* const* argv, int world_size = 1);

// Checks combinations and fills derived values (called by parse_train_args).
void validate_train_args(TrainArgs& a, int world_size);

// The model's MoeConfig from the --num-experts / --moe-* flags (an empty one without --num-experts); throws
// Error naming the flag on a bad value (the model's own MoE constraints: ModelConfig::check_moe).
MoeConfig moe_config_from_args(const MoeArgs& a, int num_layers);

// Every flag's value, Megatron names with underscores (checkpoint metadata "args").
nlohmann::json train_args_to_json(const TrainArgs& a);

// whole_model finalized for a vocabulary of `vocab_size` tokens (from the tokenizer, or --vocab-size): the
// padded vocabulary for this run's TP size. parallel/ sets each chunk's placement from it.
StageConfig stage_config_from_args(const TrainArgs& a, int vocab_size);

}  // namespace gptrain
