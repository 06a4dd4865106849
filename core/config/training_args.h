// The run's shape in time: batch sizes, length (--train-iters or --train-samples), evaluation cadence,
// exit conditions and the seed. Read by the training loop (core/train), the LR schedule and the
// per-split sample counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gptrain {

struct TrainingArgs {
  std::optional<int> micro_batch_size;
  std::optional<int64_t> global_batch_size;  // default micro-batch size x data-parallel size
  // The global batch growing with consumed samples (core/schedule/batch_schedule.h); both need --train-samples.
  std::vector<std::string> rampup_batch_size;           // START INCREMENT RAMP_SAMPLES (Megatron's classic ramp)
  std::optional<std::string> step_batch_size_schedule;  // "THRESHOLD:BATCH ...", thresholds in tokens
  bool decrease_batch_size_if_needed = false;  // round the batch down to a multiple of mbs x DP instead of failing
  std::optional<int64_t> train_iters, train_samples;  // exactly one
  std::optional<int> eval_interval;                   // unset: evaluate once, after training
  // --start-eval-at-iter: no --eval-interval evaluation before this iteration (the one after training stays).
  std::optional<int64_t> start_eval_at_iter;
  int eval_iters = 100;
  // Evaluation batches (Megatron's): unset, those of training. validate_train_args fills both when either
  // is given.
  std::optional<int> eval_micro_batch_size;
  std::optional<int64_t> eval_global_batch_size;
  // No training and no save: the (loaded) model's validation and test losses only.
  bool skip_train = false;
  // Each evaluation covers the whole validation split (one epoch of it), whatever --eval-iters says.
  bool full_validation = false;
  // Iterations whose global batch is consumed (and counted as skipped samples) but not trained on.
  std::vector<int> iterations_to_skip;
  std::optional<int64_t> exit_interval;
  std::optional<double> exit_duration_in_mins;
  // On --exit-signal (a name, default SIGTERM) finish the iteration, save (with --save) and exit 0, every
  // rank at the same iteration (core/train/exit_signal.h).
  bool exit_signal_handler = false;
  std::string exit_signal = "SIGTERM";
  int64_t seed = 1234;  // init, dropout and data shuffling
  // The gradient is that of the global batch's token-summed loss over its loss-token count, not the mean
  // of the micro-batches' token means (core/train/model_runner.h LossNormalization).
  bool calculate_per_token_loss = false;
  // Result checks (core/train/result_checks.h): a non-finite loss or gradient norm stops the run unless
  // switched off; a loss / gradient norm >= 10x the largest of the first 100 iterations stops it when asked.
  bool no_check_for_nan_in_loss_and_grad = false;
  bool check_for_spiky_loss = false;
  bool check_for_large_grads = false;
  // Every N iterations (and at the start), the parameters of every DP replica must be bit-identical.
  std::optional<int64_t> check_weight_hash_across_dp_replicas_interval;
};

}  // namespace gptrain
