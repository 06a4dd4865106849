// The learning-rate and weight-decay schedule flags (Megatron's OptimizerParamScheduler), with Megatron's
// defaults (docs/megatron-compat.md §3.2, formulas §3.4). The run's length (--train-iters /
// --train-samples) and global batch come from TrainingArgs; the other *_iters / *_samples flags must
// match that mode. Read by core/schedule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gptrain::schedule {

struct LrScheduleArgs {
  std::optional<double> lr;                        // --lr (required)
  double min_lr = 0.0;                             // --min-lr
  std::string lr_decay_style = "linear";           // --lr-decay-style
  std::optional<int64_t> lr_decay_iters;           // --lr-decay-iters   (default: train_iters)
  std::optional<int64_t> lr_decay_samples;         // --lr-decay-samples (default: train_samples)
  int64_t lr_warmup_iters = 0;                     // --lr-warmup-iters
  int64_t lr_warmup_samples = 0;                   // --lr-warmup-samples
  std::optional<double> lr_warmup_fraction;        // --lr-warmup-fraction (exclusive with the two above)
  double lr_warmup_init = 0.0;                     // --lr-warmup-init
  std::string lr_wsd_decay_style = "exponential";  // --lr-wsd-decay-style
  std::optional<int64_t> lr_wsd_decay_iters;       // --lr-wsd-decay-iters   (required for WSD, iteration mode)
  std::optional<int64_t> lr_wsd_decay_samples;     // --lr-wsd-decay-samples (required for WSD, sample mode)

  double weight_decay = 0.01;                        // --weight-decay
  std::optional<double> start_weight_decay;          // --start-weight-decay (only with a non-constant style)
  std::optional<double> end_weight_decay;            // --end-weight-decay
  std::string weight_decay_incr_style = "constant";  // --weight-decay-incr-style

  // Own peak and floor of the input embedding and output layer weights (same warmup/decay shape); the
  // floor defaults to --min-lr. --decoupled-min-lr alone changes nothing (Megatron).
  std::optional<double> decoupled_lr;      // --decoupled-lr
  std::optional<double> decoupled_min_lr;  // --decoupled-min-lr

  bool override_opt_param_scheduler = false;        // --override-opt-param-scheduler
  bool use_checkpoint_opt_param_scheduler = false;  // --use-checkpoint-opt-param-scheduler
};

}  // namespace gptrain::schedule
