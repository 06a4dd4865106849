#include "core/train/result_checks.h"

#include <cmath>

#include "core/common/agreed_error.h"
#include "core/common/error.h"

namespace gptrain {

// The loss and the gradient norm are the same on every rank (reduced before they get here), so every rank
// stops at the same iteration with the same message.

bool UnexpectedlyLarge::rejects(double value) {
  const double v = std::fabs(value);
  if (!std::isfinite(v)) return false;
  if (seen_ < num_samples_) {
    ++seen_;
    max_ = std::max(max_, v);
    return false;
  }
  return v >= max_ * threshold_;
}

void ResultChecks::check_loss(int64_t iteration, double loss, bool loss_may_overflow) {
  if (flags_.nan_in_loss_and_grad && !std::isfinite(loss) && !loss_may_overflow)
    fail_agreed(
        "iteration {}: the loss is {} (diverged; lower --lr or check the data; "
        "--no-check-for-nan-in-loss-and-grad trains on)",
        iteration, loss);
  if (flags_.spiky_loss && loss_.rejects(loss))
    fail_agreed(
        "iteration {}: spiky loss {:.6E}, at least {}x the largest loss of the first {} iterations ({:.6E}) "
        "(--check-for-spiky-loss)",
        iteration, loss, loss_.threshold(), loss_.num_samples(), loss_.reference());
}

void ResultChecks::check_grad_norm(int64_t iteration, double grad_norm, bool skipped) {
  if (skipped) return;
  if (flags_.nan_in_loss_and_grad && !std::isfinite(grad_norm))
    fail_agreed("iteration {}: the gradient norm is {} (--no-check-for-nan-in-loss-and-grad trains on)", iteration,
                grad_norm);
  if (flags_.large_grads && grads_.rejects(grad_norm))
    fail_agreed(
        "iteration {}: unexpectedly large gradient norm {:.6E}, at least {}x the largest of the first {} iterations "
        "({:.6E}) (--check-for-large-grads)",
        iteration, grad_norm, grads_.threshold(), grads_.num_samples(), grads_.reference());
}

}  // namespace gptrain
