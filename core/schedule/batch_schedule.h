// The global batch size of every iteration, as Megatron's num-microbatches calculators
// (megatron/core/num_microbatches_calculator.py) and update_train_iters (megatron/training/training.py)
// decide it. The batch of an iteration depends only on the samples consumed before it, so resuming
// from a checkpoint's consumed samples continues the schedule exactly, and the data order does not
// change: the same sequence of samples is only cut into iterations of different sizes.
//
//   constant       --global-batch-size every iteration.
//   ramp-up        --rampup-batch-size START INCR SAMPLES: with n = (gbs - START) / INCR increments spread
//                  over SAMPLES samples (per = SAMPLES / n, a real number), the batch is
//                  START + INCR * int(consumed / per) while consumed <= SAMPLES, gbs afterwards.
//   step schedule  --step-batch-size-schedule "THR:BS ...": thresholds count tokens (suffixes K, M, B, T),
//                  turned into samples by floor division by --seq-length; the batch is the BS of the
//                  largest threshold <= consumed samples. The last BS is the global batch size.
//
// Megatron's "running" batch is the one an iteration really takes: with --decrease-batch-size-if-needed
// the batch rounded down to a multiple of micro-batch size x DP; without it that batch must divide.
// The LR schedule and consumed samples advance by the running batch; the iteration count of
// sample-based training is computed with the un-rounded batches (Megatron's update_train_iters).
#pragma once

#include "core/config/training_args.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gptrain::schedule {

struct BatchRampup {
  int64_t start = 0, increment = 0, samples = 0;
};

struct BatchStep {
  int64_t threshold = 0;  // consumed samples from which batch_size applies
  int64_t batch_size = 0;
};

// --rampup-batch-size values: exactly three integers, start > 0, increment > 0, samples > 0.
BatchRampup parse_rampup_batch_size(const std::vector<std::string>& values);
// --step-batch-size-schedule: entries "THR:BS" separated by spaces or commas, numbers with an optional
// K/M/B/T suffix (Python's int(float(x) * multiplier)); thresholds in tokens, divided by seq_length and
// sorted; the first must be 0, thresholds strictly increasing, batch sizes positive and never decreasing
// (Megatron's loop stops when the number of micro-batches would fall).
std::vector<BatchStep> parse_step_batch_size_schedule(const std::string& text, int64_t seq_length);

class GlobalBatchSchedule {
 public:
  // round = micro-batch size x data-parallel size. With steps, global_batch_size must be the last step's.
  GlobalBatchSchedule(int64_t global_batch_size, int64_t micro_batch_size, int64_t data_parallel_size,
                      bool decrease_if_needed, std::optional<BatchRampup> rampup = std::nullopt,
                      std::vector<BatchStep> steps = {});
  // From the training flags (global_batch_size set: validate_train_args fills it).
  static GlobalBatchSchedule from_args(const TrainingArgs& t, int data_parallel_size, int64_t seq_length);

  bool varies() const { return rampup_.has_value() || steps_.size() > 1; }
  int64_t global_batch_size() const { return gbs_; }
  // Megatron's current global batch size after `consumed` samples.
  int64_t batch_size(int64_t consumed) const;
  // The batch the iteration takes (rounded down with --decrease-batch-size-if-needed); throws when it does
  // not divide by micro-batch size x DP, or rounds to 0.
  int64_t running_batch_size(int64_t consumed) const;
  int num_micro_batches(int64_t consumed) const;
  // Evaluation batches: the global batch size, rounded down to whole micro-batch rounds (Megatron).
  int64_t eval_batch_size() const;
  // Largest number of micro-batches any iteration can take (memory plan).
  int max_num_micro_batches() const;
  // Iterations of a --train-samples run (Megatron's update_train_iters; a partial last batch is dropped).
  int64_t train_iters(int64_t train_samples) const;
  // Samples consumed by the first `iterations` iterations from 0 (running batches); throws as
  // running_batch_size for the first iteration whose batch does not divide.
  int64_t samples_consumed(int64_t iterations) const;
  // "ramp-up from 16 to 64 by 16 over 300 samples" etc., for the log.
  std::string describe() const;

 private:
  int64_t round_down(int64_t batch) const { return batch / round_ * round_; }
  int64_t gbs_, mbs_, dp_, round_;
  bool decrease_;
  std::optional<BatchRampup> rampup_;
  double samples_per_increment_ = 0.0;
  std::vector<BatchStep> steps_;
};

}  // namespace gptrain::schedule
