#include "core/schedule/batch_schedule.h"

#include "core/common/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace gptrain::schedule {

namespace {

const char* const kRamp = "--rampup-batch-size";
const char* const kSteps = "--step-batch-size-schedule";

int64_t parse_integer(const std::string& s, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  check(!s.empty() && end == s.c_str() + s.size() && errno == 0, "{}: '{}' is not an integer", what, s);
  return v;
}

// A schedule number: Python's int(float(x) * multiplier) with an optional K/M/B/T suffix (case-insensitive).
int64_t parse_suffixed(std::string s, const std::string& entry) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.erase(s.begin());
  double mult = 1.0;
  if (!s.empty()) {
    switch (std::toupper(static_cast<unsigned char>(s.back()))) {
      case 'T': mult = 1e12; break;
      case 'B': mult = 1e9; break;
      case 'M': mult = 1e6; break;
      case 'K': mult = 1e3; break;
      default: break;
    }
    if (mult != 1.0) s.pop_back();
  }
  char* end = nullptr;
  const double x = std::strtod(s.c_str(), &end);
  check(!s.empty() && end == s.c_str() + s.size(),
        "{}: entry '{}': '{}' is not a number (optionally with a K, M, B or T suffix)", kSteps, entry, s);
  const double v = x * mult;
  check(std::isfinite(v) && std::fabs(v) < 9.2e18, "{}: entry '{}': {} is out of range", kSteps, entry, s);
  return static_cast<int64_t>(v);  // truncates toward zero, as Python's int()
}

}  // namespace

BatchRampup parse_rampup_batch_size(const std::vector<std::string>& values) {
  check(values.size() == 3, "{} takes 3 values: <start batch size> <batch size increment> <ramp-up samples> (got {})",
        kRamp, values.size());
  BatchRampup r{parse_integer(values[0], kRamp), parse_integer(values[1], kRamp), parse_integer(values[2], kRamp)};
  check(r.start > 0, "{}: the start batch size must be positive, got {}", kRamp, r.start);
  check(r.increment > 0, "{}: the batch size increment must be positive, got {}", kRamp, r.increment);
  // Megatron accepts 0 ramp-up samples and then divides by zero; there is nothing to ramp over.
  check(r.samples > 0, "{}: the ramp-up samples must be positive, got {}", kRamp, r.samples);
  return r;
}

std::vector<BatchStep> parse_step_batch_size_schedule(const std::string& text, int64_t seq_length) {
  check(seq_length > 0, "{}: --seq-length must be positive", kSteps);
  std::string spaced = text;
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  std::vector<BatchStep> steps;
  size_t i = 0;
  while (i < spaced.size()) {
    while (i < spaced.size() && std::isspace(static_cast<unsigned char>(spaced[i]))) ++i;
    size_t j = i;
    while (j < spaced.size() && !std::isspace(static_cast<unsigned char>(spaced[j]))) ++j;
    if (j == i) break;
    const std::string entry = spaced.substr(i, j - i);
    i = j;
    const size_t colon = entry.find(':');
    check(colon != std::string::npos, "{}: invalid entry '{}'; expected THRESHOLD:BATCH_SIZE", kSteps, entry);
    const int64_t tokens = parse_suffixed(entry.substr(0, colon), entry);
    const int64_t batch = parse_suffixed(entry.substr(colon + 1), entry);
    check(tokens >= 0, "{}: entry '{}': the threshold must be >= 0", kSteps, entry);
    check(batch > 0, "{}: entry '{}': the batch size must be positive", kSteps, entry);
    steps.push_back({tokens / seq_length, batch});
  }
  check(!steps.empty(), "{}: the schedule has no entries (expected \"THRESHOLD:BATCH_SIZE ...\")", kSteps);
  std::stable_sort(steps.begin(), steps.end(),
                   [](const BatchStep& a, const BatchStep& b) { return a.threshold < b.threshold; });
  check(steps[0].threshold == 0, "{}: the first threshold must be 0, got {} samples ({} tokens per sample)", kSteps,
        steps[0].threshold, seq_length);
  for (size_t k = 1; k < steps.size(); ++k) {
    check(steps[k].threshold > steps[k - 1].threshold,
          "{}: thresholds must be strictly increasing once converted to samples (tokens / --seq-length {}), got {} "
          "before {}",
          kSteps, seq_length, steps[k - 1].threshold, steps[k].threshold);
    check(steps[k].batch_size >= steps[k - 1].batch_size,
          "{}: batch sizes must not decrease (Megatron stops when the number of micro-batches falls), got {} after {}",
          kSteps, steps[k].batch_size, steps[k - 1].batch_size);
  }
  return steps;
}

GlobalBatchSchedule::GlobalBatchSchedule(int64_t global_batch_size, int64_t micro_batch_size,
                                         int64_t data_parallel_size, bool decrease_if_needed,
                                         std::optional<BatchRampup> rampup, std::vector<BatchStep> steps)
    : gbs_(global_batch_size),
      mbs_(micro_batch_size),
      dp_(data_parallel_size),
      round_(micro_batch_size * data_parallel_size),
      decrease_(decrease_if_needed),
      rampup_(rampup),
      steps_(std::move(steps)) {
  check(gbs_ > 0, "--global-batch-size must be positive, got {}", gbs_);
  check(mbs_ > 0 && dp_ > 0, "--micro-batch-size and the data-parallel size must be positive");
  check(!(rampup_ && !steps_.empty()), "{} and {} exclude each other", kRamp, kSteps);
  check(!(decrease_ && !steps_.empty()), "{} and --decrease-batch-size-if-needed exclude each other (Megatron)",
        kSteps);
  if (!steps_.empty())
    check(steps_.back().batch_size == gbs_, "{}: the global batch size ({}) must be the last batch size ({})", kSteps,
          gbs_, steps_.back().batch_size);
  if (rampup_) {
    const int64_t diff = gbs_ - rampup_->start;
    check(diff > 0, "{}: the start batch size ({}) must be smaller than --global-batch-size ({})", kRamp,
          rampup_->start, gbs_);
    check(diff % rampup_->increment == 0,
          "{}: --global-batch-size ({}) minus the start batch size ({}) = {} is not divisible by the increment ({})",
          kRamp, gbs_, rampup_->start, diff, rampup_->increment);
    samples_per_increment_ = double(rampup_->samples) / double(diff / rampup_->increment);
  }
  if (!varies()) {
    // A constant batch is checked up front, as Megatron's constant calculator does.
    if (!decrease_)
      check(gbs_ % round_ == 0,
            "--global-batch-size ({}) must be divisible by --micro-batch-size ({}) x data-parallel size ({})", gbs_,
            mbs_, dp_);
    check(round_down(gbs_) > 0,
          "--global-batch-size ({}) rounds down to 0 with --decrease-batch-size-if-needed: it must be at least "
          "--micro-batch-size ({}) x data-parallel size ({})",
          gbs_, mbs_, dp_);
  }
}

GlobalBatchSchedule GlobalBatchSchedule::from_args(const TrainingArgs& t, int data_parallel_size, int64_t seq_length) {
  check(t.global_batch_size.has_value() && t.micro_batch_size.has_value(),
        "the batch schedule needs --micro-batch-size and --global-batch-size");
  std::optional<BatchRampup> ramp;
  if (!t.rampup_batch_size.empty()) ramp = parse_rampup_batch_size(t.rampup_batch_size);
  std::vector<BatchStep> steps;
  if (t.step_batch_size_schedule) steps = parse_step_batch_size_schedule(*t.step_batch_size_schedule, seq_length);
  return GlobalBatchSchedule(*t.global_batch_size, *t.micro_batch_size, data_parallel_size,
                             t.decrease_batch_size_if_needed, ramp, std::move(steps));
}

int64_t GlobalBatchSchedule::batch_size(int64_t consumed) const {
  if (rampup_) {
    if (consumed > rampup_->samples) return gbs_;
    // Real-number division and truncation, as Megatron's int(consumed / per_increment).
    const auto steps = static_cast<int64_t>(double(consumed) / samples_per_increment_);
    return std::min(gbs_, rampup_->start + steps * rampup_->increment);
  }
  int64_t b = gbs_;
  if (!steps_.empty()) {
    b = steps_[0].batch_size;
    for (const BatchStep& s : steps_)
      if (consumed >= s.threshold) b = s.batch_size;
  }
  return b;
}

int64_t GlobalBatchSchedule::running_batch_size(int64_t consumed) const {
  const int64_t b = batch_size(consumed);
  if (decrease_) {
    check(round_down(b) > 0,
          "the global batch size {} at {} consumed samples rounds down to 0 with --decrease-batch-size-if-needed: it "
          "must be at least --micro-batch-size ({}) x data-parallel size ({})",
          b, consumed, mbs_, dp_);
    return round_down(b);
  }
  check(b % round_ == 0,
        "the global batch size {} at {} consumed samples ({}) is not divisible by --micro-batch-size ({}) x "
        "data-parallel size ({}); choose sizes that divide, or add --decrease-batch-size-if-needed",
        b, consumed,
        rampup_          ? kRamp
        : steps_.empty() ? "--global-batch-size"
                         : kSteps,
        mbs_, dp_);
  return b;
}

int GlobalBatchSchedule::num_micro_batches(int64_t consumed) const {
  return static_cast<int>(running_batch_size(consumed) / round_);
}

int64_t GlobalBatchSchedule::eval_batch_size() const {
  check(round_down(gbs_) > 0, "evaluation: --global-batch-size ({}) is smaller than --micro-batch-size x DP ({})", gbs_,
        round_);
  return round_down(gbs_);
}

int GlobalBatchSchedule::max_num_micro_batches() const {
  // Every batch of a ramp or a (non-decreasing) step schedule is at most the final one.
  return static_cast<int>(std::max<int64_t>(1, round_down(gbs_) / round_));
}

int64_t GlobalBatchSchedule::train_iters(int64_t train_samples) const {
  int64_t iterations = 0, consumed = 0;
  if (rampup_) {
    // Megatron's update_train_iters: ramp-up iterations (the last may pass train_samples), then whole
    // batches of the final size.
    while (consumed <= rampup_->samples && consumed <= train_samples) {
      consumed += batch_size(consumed);
      ++iterations;
    }
    if (train_samples > consumed) iterations += (train_samples - consumed) / gbs_;
    return iterations;
  }
  if (steps_.size() > 1) {
    // The iterations whose whole batch fits in train_samples (the constant rule, step by step).
    while (consumed < steps_.back().threshold) {
      const int64_t b = batch_size(consumed);
      if (consumed + b > train_samples) return iterations;
      consumed += b;
      ++iterations;
    }
    return iterations + (train_samples - consumed) / gbs_;
  }
  return train_samples / gbs_;
}

int64_t GlobalBatchSchedule::samples_consumed(int64_t iterations) const {
  int64_t consumed = 0, i = 0;
  // Past the ramp (or the last step) every batch is the final one.
  const int64_t settled = rampup_ ? rampup_->samples + 1 : steps_.empty() ? 0 : steps_.back().threshold;
  for (; i < iterations && consumed < settled; ++i) consumed += running_batch_size(consumed);
  return i < iterations ? consumed + (iterations - i) * running_batch_size(consumed) : consumed;
}

std::string GlobalBatchSchedule::describe() const {
  std::string s;
  if (rampup_) {
    s = fmt::format("batch-size ramp-up from {} to {} in steps of {} over {} samples", rampup_->start, gbs_,
                    rampup_->increment, rampup_->samples);
  } else if (steps_.size() > 1) {
    s = "step batch-size schedule:";
    for (const BatchStep& st : steps_) s += fmt::format(" {} from sample {},", st.batch_size, st.threshold);
    s.pop_back();
  } else {
    s = fmt::format("constant global batch size {}", gbs_);
  }
  if (decrease_) s += fmt::format(" (rounded down to multiples of {} with --decrease-batch-size-if-needed)", round_);
  return s;
}

}  // namespace gptrain::schedule
