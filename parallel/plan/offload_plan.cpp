#include "parallel/plan/offload_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace gptrain::parallel {

namespace {

std::string offload_flags(int layers, double fraction) {
  std::string f;
  if (layers > 0) f = fmt::format("--cpu-offloading-num-layers {}", layers);
  if (fraction > 0) {
    if (!f.empty()) f += " ";
    f += "--optimizer-cpu-offload";
    if (fraction < 1.0) f += fmt::format(" --optimizer-offload-fraction {}", fraction);
  }
  return f;
}

}  // namespace

std::vector<OffloadChoice> offload_choices(const StageConfig& model, int div, const ParallelArgs& opts, int pp_rank,
                                           int dp_size, int num_microbatches, DType compute,
                                           const WorkspaceOptions& ws) {
  std::set<int> layers = {0};
  const int most = model.num_layers - 1;
  const int spread = 16;
  for (int i = 1; i <= std::min(most, spread); ++i) layers.insert(most <= spread ? i : i * most / spread);
  // The layouts once: neither offload changes them.
  const StageParameterCounts counts = stage_parameter_counts(model, div, opts, pp_rank, dp_size);
  std::vector<OffloadChoice> out;
  for (const int n : layers) {
    for (const double f : {0.0, 0.25, 0.5, 0.75, 1.0}) {
      if (n == 0 && f == 0.0) continue;
      StageConfig m = model;
      m.cpu_offload_layers = n;
      ParallelArgs o = opts;
      o.optimizer_cpu_offload = f > 0;
      o.optimizer_offload_fraction = f > 0 ? std::optional<double>(f) : std::nullopt;
      out.push_back(
          {n, f, offload_flags(n, f), memory_plan(m, div, o, pp_rank, dp_size, num_microbatches, compute, ws, counts)});
    }
  }
  return out;
}

std::optional<OffloadChoice> cheapest_fitting_offload(const std::vector<OffloadChoice>& choices,
                                                      std::size_t free_bytes) {
  std::optional<OffloadChoice> best;
  for (const OffloadChoice& c : choices) {
    if (c.plan.total() > free_bytes) continue;
    if (!best || c.plan.host_bytes_per_step < best->plan.host_bytes_per_step ||
        (c.plan.host_bytes_per_step == best->plan.host_bytes_per_step && c.plan.total() < best->plan.total()))
      best = c;
  }
  return best;
}

std::string offload_advice(const OffloadChoice& c) {
  return fmt::format("{} ({} copied to and from host memory per step)", c.flags,
                     format_bytes(c.plan.host_bytes_per_step));
}

}  // namespace gptrain::parallel
