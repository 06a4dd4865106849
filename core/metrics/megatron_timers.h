// Megatron's per-operation timers (--timing-log-level 1 or 2) from gptrain's own ranges: a timer sink
// (core/common/profile_range.h) that adds the wall time of each range that is one of Megatron's timers,
// summed over a log interval, then the "(min, max) time across ranks (ms):" block printed after the log
// line and the "<name>-time" TensorBoard scalars (--log-timers-to-tensorboard).
//
// Megatron's timer             level  gptrain's range
//   forward-backward             1    forward-backward (the step's pipeline schedule and gradient sync)
//   layernorm-grads-all-reduce   1    the TP all-reduce of the layer-norm (and other TP-partial) gradients
//   embedding-grads-all-reduce   1    the all-reduce of tied word embeddings across the first and last stage
//   all-grads-sync               1    dp-grad-reduce (the data-parallel gradient reduction)
//   optimizer-clip-main-grad     1    grad-norm (the norm; clipping is folded into the step's scale)
//   optimizer-count-zeros        1    --log-num-zeros-in-grad's count
//   optimizer-inner-step         1    optimizer-step (the update, the copy to the compute parameters and,
//                                     with --use-distributed-optimizer, the start of the parameter all-gather)
//   optimizer                    1    the whole optimizer step (the three above, the loss-scale update)
//   batch-generator              2    data-fetch (the iteration's micro-batches, read and on the backend)
//   forward-compute              2    forward (each micro-batch's forward of this stage)
//   backward-compute             2    backward (each micro-batch's backward, recomputation included)
// Megatron's other level-1/2 timers (params-all-gather, optimizer-copy-to-main-grad,
// optimizer-unscale-and-check-inf, optimizer-copy-main-to-model-params, the pipeline's send/recv timers)
// have no separate phase in gptrain and are not printed; a timer that measured nothing on every rank is
// left out, as Megatron does. Ranges inside an evaluation are not counted. A range that opens inside
// another range of the same timer adds nothing (its time is in the outer one). With a `sync` (the CUDA
// backend) each counted range waits for the device at its start and end, as Megatron's timers do; with a
// `barrier`, forward-backward and optimizer start with one over every rank (Megatron's default
// --barrier-with-L1-time).
#pragma once

#include "core/common/profile_range.h"

#include <array>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gptrain::metrics {

class MegatronTimers final : public RangeSink {
 public:
  // level: --timing-log-level (1 or 2). sync: waits for the device, or empty. barrier: every rank's.
  MegatronTimers(int level, std::function<void()> sync, std::function<void()> barrier);
  void push(const char* name, int index) override;
  void pop() override;

  // Megatron's names of this level, in its order, and the seconds each measured since the last reset.
  std::vector<std::pair<std::string, double>> elapsed() const;
  void reset();

 private:
  using Clock = std::chrono::steady_clock;
  struct Open {
    int timer = -1;         // the timer it belongs to, or -1
    bool counted = false;   // its time is added (not nested in a range of the same timer)
    bool evaluate = false;  // an "evaluate" range
    Clock::time_point start;
  };
  int level_;
  std::function<void()> sync_, barrier_;
  std::vector<Open> open_;
  std::vector<double> seconds_;
  std::vector<int> depth_;  // per timer: how many of its ranges are open
  int evaluating_ = 0;      // open "evaluate" ranges
};

// Megatron's block (its timers' log()): "(min, max) time across ranks (ms):" then one line per timer,
// its name padded with dots to 48 columns; times in ms per iteration (the sums divided by
// `iterations`). Empty when no timer measured anything. min/max: per timer, over the ranks where it
// is > 0 (nullopt: on none).
std::string format_timer_block(const std::vector<std::string>& names, const std::vector<std::optional<double>>& min_s,
                               const std::vector<std::optional<double>>& max_s, double iterations);

}  // namespace gptrain::metrics
