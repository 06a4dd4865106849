// What Megatron's training_log accumulates between two log lines (training.py, total_loss_dict):
//  - per loss name, the fp32 sum of the per-iteration losses of NON-skipped iterations (each one the
//    token-weighted mean over that iteration's global batch); the line prints sum / max(1, advanced);
//  - advanced iterations (optimizer step taken), skipped iterations (fp16 overflow: step skipped,
//    scheduler not advanced), and "nan iterations": skipped iterations whose loss was NaN or ±inf.
// Loss names keep the order of their first non-skipped appearance and survive reset() (with a zero
// sum), so an interval of only skipped iterations prints 0.000000E+00 as Megatron does.
//
// Megatron also logs right after the first iteration of a run (or of a resume) WITHOUT resetting, so
// the first regular line averages over the iterations since the start: call reset() after every line
// except that first one. The elapsed time per iteration is the interval's time / total_iterations().
#pragma once

#include "core/metrics/log_line.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gptrain::metrics {

class LogInterval {
 public:
  // After each training iteration: its losses ({"lm loss", x}, fp32 as computed) and whether the
  // optimizer step was skipped.
  void add_iteration(const std::vector<std::pair<std::string, float>>& losses, bool skipped);

  int64_t advanced_iterations() const { return advanced_; }
  int64_t skipped_iterations() const { return skipped_; }
  int64_t nan_iterations() const { return nan_; }
  int64_t total_iterations() const { return advanced_ + skipped_; }

  // ("lm loss", fp32 sum / max(1, advanced)) in first-seen order.
  std::vector<std::pair<std::string, double>> average_losses() const;

  // Sets v.losses, v.skipped_iterations and v.nan_iterations.
  void fill(IterationLogValues& v) const;

  void reset();

 private:
  std::vector<std::pair<std::string, float>> sums_;
  int64_t advanced_ = 0;
  int64_t skipped_ = 0;
  int64_t nan_ = 0;
};

}  // namespace gptrain::metrics
