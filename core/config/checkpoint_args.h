// Checkpointing (--save/--load and Megatron's save/load switches) and logging (--log-interval,
// TensorBoard, gptrain's JSONL metrics). Both are read by the training loop.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gptrain {

struct CheckpointArgs {
  std::optional<std::string> save, load;
  std::optional<int> save_interval;
  bool no_save_optim = false, no_save_rng = false, no_load_optim = false, no_load_rng = false;
  bool finetune = false;
  bool exit_on_missing_checkpoint = false;  // --load without a checkpoint stops instead of starting afresh
  std::optional<int64_t> ckpt_step;
};

struct LoggingArgs {
  int log_interval = 100;
  bool log_throughput = false;
  std::optional<std::string> tensorboard_dir;
  std::optional<std::string> metrics_file;  // gptrain: JSONL, one object per logged iteration / evaluation
};

}  // namespace gptrain
