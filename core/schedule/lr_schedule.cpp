// Megatron's OptimizerParamScheduler. The arithmetic follows the Python expression order (and uses
// pow(x, 0.5) where Python writes x**0.5) so the LR printed in the log matches Megatron's digits.
#include "core/schedule/lr_schedule.h"

#include "core/common/error.h"
#include "core/common/log.h"

#include <cmath>
#include <numbers>

namespace gptrain::schedule {

LrDecayStyle parse_lr_decay_style(const std::string& name) {
  if (name == "constant") return LrDecayStyle::constant;
  if (name == "linear") return LrDecayStyle::linear;
  if (name == "cosine") return LrDecayStyle::cosine;
  if (name == "inverse-square-root") return LrDecayStyle::inverse_square_root;
  if (name == "WSD") return LrDecayStyle::wsd;
  fail("--lr-decay-style: '{}' is not one of constant|linear|cosine|inverse-square-root|WSD", name);
}

WsdDecayStyle parse_wsd_decay_style(const std::string& name) {
  if (name == "exponential") return WsdDecayStyle::exponential;
  if (name == "linear") return WsdDecayStyle::linear;
  if (name == "cosine") return WsdDecayStyle::cosine;
  if (name == "minus_sqrt") return WsdDecayStyle::minus_sqrt;
  fail("--lr-wsd-decay-style: '{}' is not one of exponential|linear|cosine|minus_sqrt", name);
}

WdIncrStyle parse_wd_incr_style(const std::string& name) {
  if (name == "constant") return WdIncrStyle::constant;
  if (name == "linear") return WdIncrStyle::linear;
  if (name == "cosine") return WdIncrStyle::cosine;
  fail("--weight-decay-incr-style: '{}' is not one of constant|linear|cosine", name);
}

std::string to_string(LrDecayStyle s) {
  switch (s) {
    case LrDecayStyle::constant: return "constant";
    case LrDecayStyle::linear: return "linear";
    case LrDecayStyle::cosine: return "cosine";
    case LrDecayStyle::inverse_square_root: return "inverse-square-root";
    case LrDecayStyle::wsd: return "WSD";
  }
  return "?";
}

std::string to_string(WsdDecayStyle s) {
  switch (s) {
    case WsdDecayStyle::exponential: return "exponential";
    case WsdDecayStyle::linear: return "linear";
    case WsdDecayStyle::cosine: return "cosine";
    case WsdDecayStyle::minus_sqrt: return "minus_sqrt";
  }
  return "?";
}

std::string to_string(WdIncrStyle s) {
  switch (s) {
    case WdIncrStyle::constant: return "constant";
    case WdIncrStyle::linear: return "linear";
    case WdIncrStyle::cosine: return "cosine";
  }
  return "?";
}

LrSchedule resolve_lr_schedule(const LrScheduleArgs& a, const TrainingArgs& run) {
  check(a.lr.has_value(), "--lr is required (the peak learning rate)");
  check(run.train_iters.has_value() != run.train_samples.has_value(),
        "exactly one of --train-iters and --train-samples must be given");
  check(run.global_batch_size.value_or(0) > 0, "--global-batch-size must be > 0, got {}",
        run.global_batch_size.value_or(0));
  check(a.lr_warmup_iters >= 0, "--lr-warmup-iters must be >= 0, got {}", a.lr_warmup_iters);
  check(a.lr_warmup_samples >= 0, "--lr-warmup-samples must be >= 0, got {}", a.lr_warmup_samples);
  if (a.lr_warmup_fraction) {
    check(*a.lr_warmup_fraction >= 0.0, "--lr-warmup-fraction must be >= 0, got {}", *a.lr_warmup_fraction);
    check(a.lr_warmup_iters == 0 && a.lr_warmup_samples == 0,
          "--lr-warmup-fraction cannot be combined with --lr-warmup-iters or --lr-warmup-samples");
  }
  check(!(a.override_opt_param_scheduler && a.use_checkpoint_opt_param_scheduler),
        "--override-opt-param-scheduler and --use-checkpoint-opt-param-scheduler are mutually exclusive");

  LrSchedule s;
  s.init_lr = a.lr_warmup_init;
  s.max_lr = *a.lr;
  s.min_lr = a.min_lr;
  s.decay_style = parse_lr_decay_style(a.lr_decay_style);
  s.wsd_decay_style = parse_wsd_decay_style(a.lr_wsd_decay_style);
  s.wd_incr_style = parse_wd_incr_style(a.weight_decay_incr_style);
  check(s.min_lr >= 0.0, "--min-lr must be >= 0, got {}", s.min_lr);
  check(s.max_lr >= s.min_lr, "--lr ({}) must be >= --min-lr ({})", s.max_lr, s.min_lr);
  check(s.init_lr <= s.max_lr, "--lr-warmup-init ({}) must be <= --lr ({})", s.init_lr, s.max_lr);
  if (a.decoupled_lr) {
    s.decoupled_max_lr = *a.decoupled_lr;
    s.decoupled_min_lr = a.decoupled_min_lr.value_or(s.min_lr);
    check(*s.decoupled_max_lr >= 0.0, "--decoupled-lr must be >= 0, got {}", *s.decoupled_max_lr);
    check(*s.decoupled_min_lr >= 0.0, "--decoupled-min-lr must be >= 0, got {}", *s.decoupled_min_lr);
    // Megatron runs these (the group's LR then rises while decaying, or falls during warmup): say so.
    if (*s.decoupled_min_lr > *s.decoupled_max_lr)
      log::warn("--decoupled-lr {} is below its floor {} ({}): that group's LR rises as the schedule decays",
                *s.decoupled_max_lr, *s.decoupled_min_lr, a.decoupled_min_lr ? "--decoupled-min-lr" : "--min-lr");
  } else if (a.decoupled_min_lr) {
    log::warn("--decoupled-min-lr {} has no effect without --decoupled-lr (as in Megatron)", *a.decoupled_min_lr);
  }

  const int64_t gbs = *run.global_batch_size;
  if (run.train_iters) {
    check(!a.lr_decay_samples, "--lr-decay-samples needs --train-samples; with --train-iters use --lr-decay-iters");
    check(a.lr_warmup_samples == 0,
          "--lr-warmup-samples needs --train-samples; with --train-iters use --lr-warmup-iters");
    check(!a.lr_wsd_decay_samples,
          "--lr-wsd-decay-samples needs --train-samples; with --train-iters use --lr-wsd-decay-iters");
    const int64_t decay_iters = a.lr_decay_iters.value_or(*run.train_iters);
    s.decay_steps = decay_iters * gbs;
    s.wd_incr_steps = *run.train_iters * gbs;
    if (a.lr_wsd_decay_iters) s.wsd_decay_steps = *a.lr_wsd_decay_iters * gbs;
    s.warmup_steps = a.lr_warmup_fraction ? *a.lr_warmup_fraction * static_cast<double>(s.decay_steps)
                                          : static_cast<double>(a.lr_warmup_iters * gbs);
  } else {
    check(!a.lr_decay_iters, "--lr-decay-iters needs --train-iters; with --train-samples use --lr-decay-samples");
    check(a.lr_warmup_iters == 0,
          "--lr-warmup-iters needs --train-iters; with --train-samples use --lr-warmup-samples");
    check(!a.lr_wsd_decay_iters,
          "--lr-wsd-decay-iters needs --train-iters; with --train-samples use --lr-wsd-decay-samples");
    s.decay_steps = a.lr_decay_samples.value_or(*run.train_samples);
    s.wd_incr_steps = *run.train_samples;
    s.wsd_decay_steps = a.lr_wsd_decay_samples;
    s.warmup_steps = a.lr_warmup_fraction ? *a.lr_warmup_fraction * static_cast<double>(s.decay_steps)
                                          : static_cast<double>(a.lr_warmup_samples);
  }
  check(s.decay_steps > 0,
        "the LR decay horizon is {} samples; it must be > 0 (--lr-decay-iters/--lr-decay-samples, default "
        "--train-iters·--global-batch-size or --train-samples)",
        s.decay_steps);
  check(s.warmup_steps < static_cast<double>(s.decay_steps),
        "LR warmup ({} samples) must be shorter than the decay horizon ({} samples)", s.warmup_steps, s.decay_steps);
  if (s.decay_style == LrDecayStyle::wsd) {
    check(s.wsd_decay_steps.has_value(),
          "--lr-decay-style WSD needs --lr-wsd-decay-iters (or --lr-wsd-decay-samples with --train-samples)");
    check(*s.wsd_decay_steps >= 0, "--lr-wsd-decay-iters/--lr-wsd-decay-samples must be >= 0");
  } else {
    check(!s.wsd_decay_steps.has_value(),
          "--lr-wsd-decay-iters/--lr-wsd-decay-samples only apply with "
          "--lr-decay-style WSD (got --lr-decay-style {})",
          to_string(s.decay_style));
  }

  if (s.wd_incr_style == WdIncrStyle::constant) {
    check(!a.start_weight_decay && !a.end_weight_decay,
          "--start-weight-decay/--end-weight-decay need --weight-decay-incr-style linear or cosine "
          "(with the default constant style use --weight-decay)");
    s.start_wd = a.weight_decay;
    s.end_wd = a.weight_decay;
  } else {
    check(a.start_weight_decay && a.end_weight_decay,
          "--weight-decay-incr-style {} needs both --start-weight-decay and --end-weight-decay",
          to_string(s.wd_incr_style));
    s.start_wd = *a.start_weight_decay;
    s.end_wd = *a.end_weight_decay;
  }
  check(s.start_wd >= 0.0, "the start weight decay must be >= 0, got {}", s.start_wd);
  check(s.end_wd >= s.start_wd, "--end-weight-decay ({}) must be >= --start-weight-decay ({})", s.end_wd, s.start_wd);
  check(s.wd_incr_style == WdIncrStyle::constant || s.wd_incr_steps > 0,
        "--weight-decay-incr-style {} needs a training length > 0", to_string(s.wd_incr_style));
  return s;
}

double lr_at(const LrSchedule& s, int64_t num_steps) { return lr_at(s, num_steps, s.max_lr, s.min_lr); }

double decoupled_lr_at(const LrSchedule& s, int64_t num_steps) {
  if (!s.decoupled_max_lr) return lr_at(s, num_steps);
  return lr_at(s, num_steps, *s.decoupled_max_lr, *s.decoupled_min_lr);
}

double lr_at(const LrSchedule& s, int64_t num_steps, double max_lr, double min_lr) {
  const double n = static_cast<double>(num_steps);
  // Linear warmup from init_lr (shared by every group) to the group's peak.
  if (s.warmup_steps > 0.0 && n <= s.warmup_steps) {
    return s.init_lr + (max_lr - s.init_lr) * n / s.warmup_steps;
  }
  if (s.decay_style == LrDecayStyle::constant) return max_lr;
  if (num_steps > s.decay_steps) return min_lr;
  if (s.decay_style == LrDecayStyle::inverse_square_root) {
    const double warmup = std::max(s.warmup_steps, 1.0);
    const double steps = static_cast<double>(std::max<int64_t>(num_steps, 1));
    const double lr = max_lr * std::pow(warmup, 0.5) / std::pow(steps, 0.5);
    return std::max(min_lr, lr);
  }
  const double decay_ratio = (n - s.warmup_steps) / (static_cast<double>(s.decay_steps) - s.warmup_steps);
  const double delta_lr = max_lr - min_lr;
  double coeff = 1.0;
  switch (s.decay_style) {
    case LrDecayStyle::linear: coeff = 1.0 - decay_ratio; break;
    case LrDecayStyle::cosine: coeff = 0.5 * (std::cos(std::numbers::pi * decay_ratio) + 1.0); break;
    case LrDecayStyle::wsd: {
      const int64_t anneal_start = s.decay_steps - *s.wsd_decay_steps;
      if (num_steps <= anneal_start) {
        coeff = 1.0;
      } else {
        const double r = static_cast<double>(num_steps - anneal_start) / static_cast<double>(*s.wsd_decay_steps);
        switch (s.wsd_decay_style) {
          case WsdDecayStyle::linear: coeff = 1.0 - r; break;
          case WsdDecayStyle::cosine: coeff = 0.5 * (std::cos(std::numbers::pi * r) + 1.0); break;
          case WsdDecayStyle::exponential: coeff = 2.0 * std::pow(0.5, r) - 1.0; break;
          case WsdDecayStyle::minus_sqrt: coeff = 1.0 - std::sqrt(r); break;
        }
      }
      break;
    }
    case LrDecayStyle::constant:
    case LrDecayStyle::inverse_square_root: break;  // handled above
  }
  return min_lr + coeff * delta_lr;
}

double weight_decay_at(const LrSchedule& s, int64_t num_steps) {
  if (num_steps > s.wd_incr_steps) return s.end_wd;
  if (s.wd_incr_style == WdIncrStyle::constant) return s.end_wd;
  const double ratio = static_cast<double>(num_steps) / static_cast<double>(s.wd_incr_steps);
  const double coeff =
      s.wd_incr_style == WdIncrStyle::linear ? ratio : 0.5 * (std::cos(std::numbers::pi * (1 - ratio)) + 1.0);
  return s.start_wd + coeff * (s.end_wd - s.start_wd);
}

LrScheduler::LrScheduler(const LrScheduleArgs& args, const TrainingArgs& run)
    : LrScheduler(resolve_lr_schedule(args, run), args.override_opt_param_scheduler,
                  args.use_checkpoint_opt_param_scheduler) {}

LrScheduler::LrScheduler(const LrSchedule& schedule, bool override_opt_param_scheduler,
                         bool use_checkpoint_opt_param_scheduler)
    : schedule_(schedule),
      override_(override_opt_param_scheduler),
      use_checkpoint_(use_checkpoint_opt_param_scheduler) {
  check(!(override_ && use_checkpoint_),
        "--override-opt-param-scheduler and --use-checkpoint-opt-param-scheduler are mutually exclusive");
}

void LrScheduler::step(int64_t increment) {
  check(increment >= 0, "LrScheduler::step: increment must be >= 0 samples, got {}", increment);
  num_steps_ += increment;
}

nlohmann::json LrScheduler::state_json() const {
  const LrSchedule& s = schedule_;
  nlohmann::json j;
  j["max_lr"] = s.max_lr;
  j["min_lr"] = s.min_lr;
  j["lr_warmup_steps"] = s.warmup_steps;
  j["lr_decay_steps"] = s.decay_steps;
  j["lr_decay_style"] = to_string(s.decay_style);
  j["num_steps"] = num_steps_;
  j["start_wd"] = s.start_wd;
  j["end_wd"] = s.end_wd;
  j["wd_incr_steps"] = s.wd_incr_steps;
  j["wd_incr_style"] = to_string(s.wd_incr_style);
  j["lr_warmup_init"] = s.init_lr;
  j["lr_wsd_decay_steps"] = s.wsd_decay_steps ? nlohmann::json(*s.wsd_decay_steps) : nlohmann::json(nullptr);
  j["lr_wsd_decay_style"] = to_string(s.wsd_decay_style);
  auto optional_number = [](const std::optional<double>& v) {
    return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
  };
  j["decoupled_lr"] = optional_number(s.decoupled_max_lr);
  j["decoupled_min_lr"] = optional_number(s.decoupled_min_lr);
  return j;
}

namespace {

const nlohmann::json& field(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  check(it != j.end(), "checkpoint scheduler state: missing key '{}'", key);
  return *it;
}

template <typename T>
T read(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = field(j, key);
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    fail("checkpoint scheduler state: key '{}' has the wrong type ({})", key, v.dump());
  }
}

// Megatron's _check_and_set: which of the flag value and the checkpoint value wins.
template <typename T>
T check_and_set(bool override_flags, bool use_checkpoint, const T& flag_value, const T& ckpt_value, const char* what,
                const std::string& flag_text, const std::string& ckpt_text) {
  if (override_flags) return flag_value;
  if (!use_checkpoint) {
    check(flag_value == ckpt_value,
          "{}: the flags give {} but the checkpoint has {}; pass --override-opt-param-scheduler to use the "
          "flags or --use-checkpoint-opt-param-scheduler to use the checkpoint's value",
          what, flag_text, ckpt_text);
  } else if (!(flag_value == ckpt_value)) {
    log::info(" > using checkpoint value {} for {} (flags give {})", ckpt_text, what, flag_text);
  }
  return ckpt_value;
}

std::string text(double v) { return fmt::format("{}", v); }
std::string text(int64_t v) { return fmt::format("{}", v); }
std::string text(const std::string& v) { return v; }
std::string text(const std::optional<int64_t>& v) { return v ? fmt::format("{}", *v) : "none"; }
std::string text(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : "none"; }

// A value the checkpoint may hold as null (unset).
template <typename T>
std::optional<T> read_optional(const nlohmann::json& j, const char* key) {
  if (field(j, key).is_null()) return std::nullopt;
  return read<T>(j, key);
}

}  // namespace

void LrScheduler::load_state_json(const nlohmann::json& state) {
  check(state.is_object(), "checkpoint scheduler state: expected a JSON object, got {}", state.dump());
  LrSchedule s = schedule_;
  auto set = [&](auto& slot, const auto& ckpt_value, const char* what) {
    slot = check_and_set(override_, use_checkpoint_, slot, ckpt_value, what, text(slot), text(ckpt_value));
  };
  set(s.max_lr, read<double>(state, "max_lr"), "learning rate (--lr)");
  set(s.min_lr, read<double>(state, "min_lr"), "minimum learning rate (--min-lr)");
  set(s.warmup_steps, read<double>(state, "lr_warmup_steps"), "warmup samples (--lr-warmup-*)");
  set(s.decay_steps, read<int64_t>(state, "lr_decay_steps"),
      "LR decay samples (--lr-decay-iters/--lr-decay-samples/--train-iters x --global-batch-size)");
  const LrDecayStyle style = parse_lr_decay_style(read<std::string>(state, "lr_decay_style"));
  std::string style_name = to_string(s.decay_style);
  set(style_name, to_string(style), "learning rate decay style (--lr-decay-style)");
  s.decay_style = parse_lr_decay_style(style_name);
  if (state.contains("start_wd")) {
    set(s.start_wd, read<double>(state, "start_wd"), "start weight decay (--start-weight-decay/--weight-decay)");
    set(s.end_wd, read<double>(state, "end_wd"), "end weight decay (--end-weight-decay/--weight-decay)");
    set(s.wd_incr_steps, read<int64_t>(state, "wd_incr_steps"), "weight decay increment samples (--train-*)");
    std::string wd_style = to_string(s.wd_incr_style);
    set(wd_style, to_string(parse_wd_incr_style(read<std::string>(state, "wd_incr_style"))),
        "weight decay increment style (--weight-decay-incr-style)");
    s.wd_incr_style = parse_wd_incr_style(wd_style);
  }
  // gptrain extensions (absent in Megatron checkpoints converted by hand: then the flags stand).
  if (state.contains("lr_warmup_init")) {
    set(s.init_lr, read<double>(state, "lr_warmup_init"), "warmup initial LR (--lr-warmup-init)");
  }
  if (state.contains("lr_wsd_decay_steps")) {
    set(s.wsd_decay_steps, read_optional<int64_t>(state, "lr_wsd_decay_steps"),
        "WSD anneal samples (--lr-wsd-decay-iters/--lr-wsd-decay-samples)");
  }
  if (state.contains("lr_wsd_decay_style")) {
    std::string wsd_style = to_string(s.wsd_decay_style);
    set(wsd_style, to_string(parse_wsd_decay_style(read<std::string>(state, "lr_wsd_decay_style"))),
        "WSD anneal style (--lr-wsd-decay-style)");
    s.wsd_decay_style = parse_wsd_decay_style(wsd_style);
  }
  // Absent from checkpoints written before gptrain had --decoupled-lr: the flags stand.
  if (state.contains("decoupled_lr")) {
    set(s.decoupled_max_lr, read_optional<double>(state, "decoupled_lr"), "decoupled learning rate (--decoupled-lr)");
    set(s.decoupled_min_lr, read_optional<double>(state, "decoupled_min_lr"),
        "decoupled minimum learning rate (--decoupled-min-lr, default --min-lr)");
  }
  check(s.decoupled_max_lr.has_value() == s.decoupled_min_lr.has_value(),
        "checkpoint scheduler state: decoupled_lr and decoupled_min_lr must both be set or both be null");
  check(s.decay_style != LrDecayStyle::wsd || s.wsd_decay_steps.has_value(),
        "checkpoint scheduler state: WSD decay style without lr_wsd_decay_steps");
  const int64_t num_steps = read<int64_t>(state, "num_steps");
  check(num_steps >= 0, "checkpoint scheduler state: num_steps must be >= 0, got {}", num_steps);
  schedule_ = s;
  num_steps_ = num_steps;
}

}  // namespace gptrain::schedule
