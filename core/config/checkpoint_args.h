// Checkpointing (--save/--load and Megatron's save/load switches) and logging (--log-interval,
// TensorBoard, gptrain's JSONL metrics, --profile's window). Both are read by the training loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gptrain {

struct CheckpointArgs {
  std::optional<std::string> save, load;
  std::optional<int> save_interval;
  // Keep the saves at multiples of this (and the latest); older iter_* directories this run's saves
  // supersede are deleted.
  std::optional<int> save_retain_interval;
  bool no_save_optim = false, no_save_rng = false, no_load_optim = false, no_load_rng = false;
  bool finetune = false;
  bool exit_on_missing_checkpoint = false;  // --load without a checkpoint stops instead of starting afresh
  std::optional<int64_t> ckpt_step;
  // The checkpoint --load names fails its checksums: load the newest earlier one that passes them instead of
  // stopping (gptrain's; without it the error names that checkpoint).
  bool ckpt_fallback_to_intact = false;
  // --async-save: tensor files written by a background thread from host copies; committed once written.
  bool async_save = false;
  // Megatron's non-persistent saves: every N iterations to --non-persistent-global-ckpt-dir (default
  // <save>/non_persistent), only the latest kept; --load takes it when it is at least as recent as the tracker's.
  std::optional<int> non_persistent_save_interval;
  std::optional<std::string> non_persistent_ckpt_type;  // "global" (the only type gptrain implements)
  std::optional<std::string> non_persistent_global_ckpt_dir;
  // --use-checkpoint-args: the model flags from the --load checkpoint's recorded flags
  // (core/config/use_checkpoint_args.h).
  bool use_checkpoint_args = false;
};

struct LoggingArgs {
  int log_interval = 100;
  bool log_throughput = false;
  std::optional<std::string> tensorboard_dir;
  std::optional<std::string> metrics_file;  // gptrain: JSONL, one object per logged iteration / evaluation
  // --profile: iterations [profile_step_start, profile_step_end) (counted as completed iterations, as
  // Megatron's loop counter) are profiled on the listed global ranks (core/metrics/profiler.h).
  bool profile = false;
  int64_t profile_step_start = 10;
  int64_t profile_step_end = 12;
  std::vector<int> profile_ranks{0};
  bool log_params_norm = false;                    // params norm in the log line and TensorBoard (every iteration)
  bool log_num_zeros_in_grad = false;              // zero gradient elements in the log line and TensorBoard
  bool log_timers_to_tensorboard = false;          // iteration-time (and throughput) at each log line
  bool log_validation_ppl_to_tensorboard = false;  // "<loss> validation ppl" scalars
  bool log_world_size_to_tensorboard = false;      // world-size scalars
  bool no_log_loss_scale_to_tensorboard = false;   // leaves out the loss-scale scalars (Megatron writes them)
  bool log_memory_to_tensorboard = false;          // mem-* scalars (the backend's allocated bytes)
  int timing_log_level = 0;                        // Megatron's timers of this level and below (megatron_timers.h)
  bool log_progress = false;                       // <save>/progress.txt (core/metrics/progress_log.h)
  std::optional<int> logging_level;                // Python's levels (core/common/log_level.h)
};

}  // namespace gptrain
