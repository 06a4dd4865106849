#include "core/metrics/log_interval.h"

#include <algorithm>
#include <cmath>

namespace gptrain::metrics {

void LogInterval::add_iteration(const std::vector<std::pair<std::string, float>>& losses, bool skipped) {
  if (skipped) {
    ++skipped_;
    bool got_nan = false;
    for (const auto& [name, value] : losses) got_nan = got_nan || !std::isfinite(value);
    nan_ += got_nan ? 1 : 0;
    return;
  }
  ++advanced_;
  for (const auto& [name, value] : losses) {
    auto it = std::find_if(sums_.begin(), sums_.end(), [&](const auto& s) { return s.first == name; });
    if (it == sums_.end()) {
      sums_.emplace_back(name, value);
    } else {
      it->second += value;  // fp32, as Megatron's torch.float accumulator
    }
  }
}

std::vector<std::pair<std::string, double>> LogInterval::average_losses() const {
  std::vector<std::pair<std::string, double>> out;
  const double n = static_cast<double>(std::max<int64_t>(1, advanced_));
  for (const auto& [name, sum] : sums_) out.emplace_back(name, static_cast<double>(sum) / n);
  return out;
}

void LogInterval::fill(IterationLogValues& v) const {
  v.losses = average_losses();
  v.skipped_iterations = skipped_;
  v.nan_iterations = nan_;
}

void LogInterval::reset() {
  for (auto& s : sums_) s.second = 0.0f;
  advanced_ = skipped_ = nan_ = 0;
}

}  // namespace gptrain::metrics
