#include "core/model/recompute.h"

#include <algorithm>

namespace gptrain {

std::string describe_recompute(const RecomputeConfig& r) {
  if (r.full())
    return std::string("full ") + (r.method == RecomputeMethod::Uniform ? "uniform " : "block ") +
           std::to_string(r.num_layers) + (r.distribute_saved_activations ? ", inputs split over TP" : "");
  if (!r.selective()) return "none";
  std::string mods;
  for (auto [on, name] : {std::pair{r.core_attn, "core_attn"},
                          {r.mlp, "mlp"},
                          {r.layernorm, "layernorm"},
                          {r.moe, "moe"},
                          {r.moe_act, "moe_act"}})
    if (on) mods += (mods.empty() ? "" : ", ") + std::string(name);
  return "selective (" + (mods.empty() ? std::string("no modules") : mods) + ")";
}

std::vector<int> recompute_group_first(const RecomputeConfig& r, int local_layers) {
  std::vector<int> first(std::size_t(std::max(local_layers, 0)), -1);
  if (!r.full() || r.num_layers <= 0) return first;
  for (int li = 0; li < local_layers; ++li) {
    if (r.method == RecomputeMethod::Uniform)
      first[li] = li / r.num_layers * r.num_layers;  // groups of N; the last one may be shorter
    else if (li < r.num_layers)
      first[li] = li;  // block: each of the first N layers alone
  }
  return first;
}

int recompute_max_group(const RecomputeConfig& r, int local_layers) {
  if (!r.full() || local_layers <= 0) return 0;
  return r.method == RecomputeMethod::Uniform ? std::min(r.num_layers, local_layers) : 1;
}

}  // namespace gptrain
