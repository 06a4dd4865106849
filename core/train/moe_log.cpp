#include "core/train/moe_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace gptrain {

namespace {

double layer_mean(const MoeConfig& m, const std::vector<double>& per_layer) {
  double sum = 0.0;
  for (std::size_t l = 0; l < per_layer.size(); ++l)
    if (m.is_moe_layer(int(l))) sum += per_layer[l];
  return sum / std::max(1, m.num_moe_layers());
}

}  // namespace

std::vector<std::pair<std::string, float>> moe_log_losses(const MoeConfig& m, const MoeStepStats& s) {
  std::vector<std::pair<std::string, float>> out;
  if (!m.enabled() || s.balance_loss.empty()) return out;
  if (m.z_loss_on()) out.emplace_back("z_loss", float(layer_mean(m, s.z_loss)));
  if (m.balance_loss_on()) out.emplace_back(m.balance_loss_name(), float(layer_mean(m, s.balance_loss)));
  return out;
}

std::vector<std::pair<std::string, double>> moe_layer_scalars(const MoeConfig& m, const MoeStepStats& s) {
  std::vector<std::pair<std::string, double>> out;
  for (std::size_t l = 0; l < s.balance_loss.size(); ++l) {
    if (m.z_loss_on()) out.emplace_back(fmt::format("moe/z_loss_layer_{}", l), s.z_loss[l]);
    if (m.balance_loss_on())
      out.emplace_back(fmt::format("moe/{}_layer_{}", m.balance_loss_name(), l), s.balance_loss[l]);
  }
  return out;
}

std::string format_moe_layer_line(const MoeConfig& m, const MoeStepStats& s, int64_t iteration) {
  std::string line = fmt::format("MoE layers at iteration {}:", iteration);
  for (std::size_t l = 0; l < s.balance_loss.size(); ++l) {
    if (!m.is_moe_layer(int(l))) continue;
    line += fmt::format(" layer {}:", l);
    if (m.z_loss_on()) line += fmt::format(" z_loss {:.6E}", s.z_loss[l]);
    if (m.balance_loss_on()) line += fmt::format(" {} {:.6E}", m.balance_loss_name(), s.balance_loss[l]);
    const std::vector<double>& t = s.tokens_per_expert[l];
    double mean = 0.0, var = 0.0;
    for (double x : t) mean += x;
    mean /= double(t.size());
    for (double x : t) var += (x - mean) * (x - mean);
    line += fmt::format(" tokens per expert min {:.0f} max {:.0f} std {:.2f} |", *std::min_element(t.begin(), t.end()),
                        *std::max_element(t.begin(), t.end()), std::sqrt(var / double(t.size())));
  }
  return line;
}

}  // namespace gptrain
