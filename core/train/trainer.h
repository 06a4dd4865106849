// The pretraining loop, Megatron's semantics (megatron/training/training.py train / evaluate):
// each iteration takes one global batch (micro-batches from the loader at consumed_train_samples),
// accumulates gradients, unscales + checks for overflow (fp16), clips, steps AdamW and the LR/WD
// schedule; logs Megatron's iteration line every --log-interval (and after the first iteration of a
// run), evaluates every --eval-interval on the valid split (consumed_valid_samples continues across
// evaluations), saves every --save-interval, exits at --exit-interval / --exit-duration-in-mins, and
// after training saves once more and reports the final validation and test losses.
//
// Everything that decides the next numbers is checkpointed (parameters, Adam moments and step,
// schedule, loss scaler, data cursors, dropout counter), so a resumed run prints the same losses as
// an uninterrupted one, bit for bit.
#pragma once

#include "core/config/train_args.h"
#include "core/model/model_config.h"
#include "core/train/model_runner.h"
#include "data/loader/gpt_data.h"

#include <cstdint>
#include <memory>

namespace gptrain {

struct TrainerPlacement {
  int dp_rank = 0, dp_size = 1;
  int world_size = 1;
  int rank = 0;         // global rank (--profile-ranks)
  bool on_gpu = false;  // the model runs on a GPU: --profile marks NVTX ranges instead of timing them
  bool logs = true;     // this rank prints lines and writes metrics (Megatron: the last rank)
};

// The state that resumes a run (besides the runner's tensors).
struct TrainProgress {
  int64_t iteration = 0;
  int64_t consumed_train_samples = 0;
  int64_t consumed_valid_samples = 0;
  int64_t skipped_train_samples = 0;   // consumed by --iterations-to-skip without training
  uint64_t dropout_micro_batches = 0;  // trained so far, over all DP ranks: keys their dropout masks
  double flops_so_far = 0.0;           // model FLOPs of the iterations trained so far (--log-progress)
};

class Trainer {
 public:
  // model: the whole model's config (TP size set, all layers) for FLOPs and checkpoint metadata.
  Trainer(const TrainArgs& args, const ModelConfig& model, ModelRunner& runner, GPTDatasets datasets, int32_t eod_token,
          TrainerPlacement placement = {});
  ~Trainer();
  // Loads --load (if any), trains, evaluates; returns the process exit code (0).
  int run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gptrain
