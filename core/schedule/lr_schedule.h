// Learning-rate and weight-decay schedule, the same numbers as Megatron-LM's OptimizerParamScheduler
// (megatron/core/optimizer_param_scheduler.py, built by training.py get_optimizer_param_scheduler).
//
// Everything is counted in SAMPLES: iteration-based flags are multiplied by the global batch size
// (decay = lr_decay_iters·gbs, warmup = lr_warmup_iters·gbs, WSD anneal = lr_wsd_decay_iters·gbs,
// weight-decay ramp = train_iters·gbs); sample-based flags are used as given. Warmup may also be a
// fraction of the decay horizon (then it is a non-integer number of samples, as in Megatron).
//
// Use from the training loop (Megatron's order):
//     LrScheduler sched(args.schedule, args.training);   // lr() is already the value for step 0
//     ... iteration k: optimizer uses sched.lr(), sched.weight_decay() (times 0 for biases/norms)
//     if (update_successful) sched.step(global_batch_size);   // skipped (overflow) steps do not advance
//     log sched.lr()                            // Megatron prints the LR for step k·gbs at iteration k
// With --decoupled-lr the input embedding and output layer weights form a second LR group:
// sched.decoupled_lr() is its value, the same warmup (from --lr-warmup-init) and decay shape between its
// own peak (--decoupled-lr) and floor (--decoupled-min-lr, default --min-lr). The log line prints the
// default group's LR; TensorBoard also gets decoupled-learning-rate (Megatron).
// Checkpoints: metadata "scheduler" = sched.state_json(); on --load (not with --finetune or
// --no-load-optim, as Megatron) call load_state_json() on a freshly constructed scheduler.
#pragma once

#include "core/config/schedule_args.h"
#include "core/config/training_args.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace gptrain::schedule {

enum class LrDecayStyle { constant, linear, cosine, inverse_square_root, wsd };
enum class WsdDecayStyle { exponential, linear, cosine, minus_sqrt };
enum class WdIncrStyle { constant, linear, cosine };

// Flag spellings: "constant"|"linear"|"cosine"|"inverse-square-root"|"WSD" and so on. Unknown names
// throw an Error naming the flag and the accepted values.
LrDecayStyle parse_lr_decay_style(const std::string& name);
WsdDecayStyle parse_wsd_decay_style(const std::string& name);
WdIncrStyle parse_wd_incr_style(const std::string& name);
std::string to_string(LrDecayStyle s);
std::string to_string(WsdDecayStyle s);
std::string to_string(WdIncrStyle s);

// The resolved schedule, in samples.
struct LrSchedule {
  double init_lr = 0.0;  // LR at step 0 of warmup
  double max_lr = 0.0;
  double min_lr = 0.0;
  double warmup_steps = 0.0;  // samples; non-integer only with --lr-warmup-fraction
  int64_t decay_steps = 0;
  LrDecayStyle decay_style = LrDecayStyle::linear;
  std::optional<int64_t> wsd_decay_steps;  // set for WSD
  WsdDecayStyle wsd_decay_style = WsdDecayStyle::exponential;
  // --decoupled-lr's group (embedding and output layer weights): its peak and floor; unset: that group
  // follows the default one.
  std::optional<double> decoupled_max_lr;
  std::optional<double> decoupled_min_lr;
  double start_wd = 0.0;
  double end_wd = 0.0;
  int64_t wd_incr_steps = 0;
  WdIncrStyle wd_incr_style = WdIncrStyle::constant;
};

// Validates the flags (Megatron's validate_args + scheduler assertions, as clear errors) and converts
// them to samples.
LrSchedule resolve_lr_schedule(const LrScheduleArgs& args, const TrainingArgs& run);

// Pure functions of the schedule and the number of samples consumed so far: the default group's LR, the
// decoupled group's (the default one's when there is none), and the shape between any peak and floor.
double lr_at(const LrSchedule& s, int64_t num_steps);
double decoupled_lr_at(const LrSchedule& s, int64_t num_steps);
double lr_at(const LrSchedule& s, int64_t num_steps, double max_lr, double min_lr);
double weight_decay_at(const LrSchedule& s, int64_t num_steps);

class LrScheduler {
 public:
  LrScheduler(const LrScheduleArgs& args, const TrainingArgs& run);
  // From an already resolved schedule (tests, tools); both flags of the resume rule are off.
  explicit LrScheduler(const LrSchedule& schedule, bool override_opt_param_scheduler = false,
                       bool use_checkpoint_opt_param_scheduler = false);

  // Advance by `increment` samples (the global batch size of a successful iteration).
  void step(int64_t increment);

  double lr() const { return lr_at(schedule_, num_steps_); }
  double decoupled_lr() const { return decoupled_lr_at(schedule_, num_steps_); }
  bool has_decoupled_lr() const { return schedule_.decoupled_max_lr.has_value(); }
  double weight_decay() const { return weight_decay_at(schedule_, num_steps_); }
  int64_t num_steps() const { return num_steps_; }
  const LrSchedule& schedule() const { return schedule_; }

  // Megatron's state_dict keys (max_lr, min_lr, lr_warmup_steps, lr_decay_steps, lr_decay_style,
  // num_steps, start_wd, end_wd, wd_incr_steps, wd_incr_style) plus gptrain's lr_warmup_init,
  // lr_wsd_decay_steps, lr_wsd_decay_style, decoupled_lr, decoupled_min_lr (null without --decoupled-lr)
  // (Megatron does not save these in the scheduler state; gptrain checks them by the same rule).
  nlohmann::json state_json() const;

  // Megatron's resume rule, per value: --override-opt-param-scheduler keeps the flag values;
  // --use-checkpoint-opt-param-scheduler takes the checkpoint's; with neither, a difference is an error
  // naming the value and both flags. num_steps always comes from the checkpoint.
  void load_state_json(const nlohmann::json& state);

 private:
  LrSchedule schedule_;
  bool override_ = false;
  bool use_checkpoint_ = false;
  int64_t num_steps_ = 0;
};

}  // namespace gptrain::schedule
