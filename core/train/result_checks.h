// Megatron's checks on a training step's results (--check-for-nan-in-loss-and-grad, on by default;
// --check-for-spiky-loss; --check-for-large-grads), applied as Megatron applies them with its rerun state
// machine disabled: a rejected value stops the run, naming the iteration and the value. gptrain has no
// reruns on another device, so there is nothing to retry.
#pragma once

#include <cstdint>
#include <string>

namespace gptrain {

// Megatron's "unexpectedly large" rule: the first `num_samples` finite observations only set the
// reference (the largest |value| seen); from then on a value with |value| >= threshold x that reference
// is rejected. NaN and +-inf are ignored here (the NaN check handles them). The reference starts afresh in
// each process, as Megatron's does with reruns disabled (its state is not restored from a checkpoint).
class UnexpectedlyLarge {
 public:
  explicit UnexpectedlyLarge(double threshold = 10.0, int64_t num_samples = 100)
      : threshold_(threshold), num_samples_(num_samples) {}
  bool rejects(double value);
  double reference() const { return max_; }
  double threshold() const { return threshold_; }
  int64_t num_samples() const { return num_samples_; }

 private:
  double threshold_;
  int64_t num_samples_;
  int64_t seen_ = 0;
  double max_ = 0.0;
};

struct ResultCheckFlags {
  bool nan_in_loss_and_grad = true;
  bool spiky_loss = false;
  bool large_grads = false;
};

// One iteration's checks, in Megatron's order (loss, then gradient). `iteration` is the 1-based number of
// the iteration that produced the values. Throws gptrain::Error when a check rejects a value.
class ResultChecks {
 public:
  explicit ResultChecks(ResultCheckFlags flags) : flags_(flags) {}
  // `loss_may_overflow`: fp16 with a dynamic loss scale, whose overflowing steps are skipped instead.
  void check_loss(int64_t iteration, double loss, bool loss_may_overflow);
  // `grad_norm` is the unscaled global norm before clipping; `skipped` steps (fp16 overflow) are not checked.
  void check_grad_norm(int64_t iteration, double grad_norm, bool skipped);

 private:
  ResultCheckFlags flags_;
  UnexpectedlyLarge loss_{10.0, 100}, grads_{10.0, 100};
};

}  // namespace gptrain
