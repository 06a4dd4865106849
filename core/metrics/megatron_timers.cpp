#include "core/metrics/megatron_timers.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

namespace gptrain::metrics {

namespace {

struct TimerDef {
  const char* megatron;  // printed name
  int level;
  const char* range;     // the gptrain range (ProfileRange or TimerRange name) it sums
  bool barrier = false;  // starts with a barrier over every rank
};

// In Megatron's order (training.py's timers_to_log).
constexpr std::array<TimerDef, 11> kTimers{{
    {"forward-backward", 1, "forward-backward", true},
    {"layernorm-grads-all-reduce", 1, "layernorm-grads-all-reduce"},
    {"embedding-grads-all-reduce", 1, "embedding-grads-all-reduce"},
    {"all-grads-sync", 1, "dp-grad-reduce"},
    {"optimizer-clip-main-grad", 1, "grad-norm"},
    {"optimizer-count-zeros", 1, "optimizer-count-zeros"},
    {"optimizer-inner-step", 1, "optimizer-step"},
    {"optimizer", 1, "optimizer", true},
    {"batch-generator", 2, "data-fetch"},
    {"forward-compute", 2, "forward"},
    {"backward-compute", 2, "backward"},
}};

int timer_of(const char* range, int level) {
  for (std::size_t i = 0; i < kTimers.size(); ++i)
    if (kTimers[i].level <= level && std::strcmp(kTimers[i].range, range) == 0) return int(i);
  return -1;
}

}  // namespace

MegatronTimers::MegatronTimers(int level, std::function<void()> sync, std::function<void()> barrier)
    : level_(level),
      sync_(std::move(sync)),
      barrier_(std::move(barrier)),
      seconds_(kTimers.size(), 0.0),
      depth_(kTimers.size(), 0) {}

void MegatronTimers::push(const char* name, int /*index*/) {
  Open o;
  if (std::strcmp(name, "evaluate") == 0) {
    o.evaluate = true;
    ++evaluating_;
  } else if (evaluating_ == 0) {
    o.timer = timer_of(name, level_);
    if (o.timer >= 0) o.counted = depth_[o.timer]++ == 0;  // nested in its own timer: the outer range counts
  }
  if (o.counted && barrier_ && kTimers[o.timer].barrier) barrier_();
  if (o.counted && sync_) sync_();
  o.start = Clock::now();
  open_.push_back(o);
}

void MegatronTimers::pop() {
  if (open_.empty()) return;
  const Open o = open_.back();
  open_.pop_back();
  if (o.evaluate) --evaluating_;
  if (o.timer < 0) return;
  --depth_[o.timer];
  if (!o.counted) return;
  if (sync_) sync_();
  seconds_[o.timer] += std::chrono::duration<double>(Clock::now() - o.start).count();
}

std::vector<std::pair<std::string, double>> MegatronTimers::elapsed() const {
  std::vector<std::pair<std::string, double>> out;
  for (std::size_t i = 0; i < kTimers.size(); ++i)
    if (kTimers[i].level <= level_) out.emplace_back(kTimers[i].megatron, seconds_[i]);
  return out;
}

void MegatronTimers::reset() { std::fill(seconds_.begin(), seconds_.end(), 0.0); }

std::string format_timer_block(const std::vector<std::string>& names, const std::vector<std::optional<double>>& min_s,
                               const std::vector<std::optional<double>>& max_s, double iterations) {
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!min_s[i] || !max_s[i]) continue;
    out += fmt::format("\n    {:.<48}: ({:.2f}, {:.2f})", names[i] + " ", *min_s[i] * 1e3 / iterations,
                       *max_s[i] * 1e3 / iterations);
  }
  return out.empty() ? out : "(min, max) time across ranks (ms):" + out;
}

}  // namespace gptrain::metrics
