// What offloading does to a stage's memory plan, and the offloading that makes a plan fit while copying
// the least to and from host memory per step: activation offloading of the first N layers
// (--cpu-offloading-num-layers) and optimizer-state offloading (--optimizer-cpu-offload with a fraction),
// alone and together, each planned with memory_plan (with the run's recomputation), so the advice "it fits
// with --cpu-offloading-num-layers 4" is computed, not guessed.
#pragma once

#include "core/model/model_config.h"
#include "parallel/plan/memory_plan.h"

#include <optional>
#include <string>
#include <vector>

namespace gptrain::parallel {

struct OffloadChoice {
  int layers = 0;                   // --cpu-offloading-num-layers
  double optimizer_fraction = 0.0;  // --optimizer-offload-fraction (0: no --optimizer-cpu-offload)
  std::string flags;  // "--cpu-offloading-num-layers 4 --optimizer-cpu-offload --optimizer-offload-fraction 0.5"
  MemoryPlan plan;    // the stage's plan with this choice
};

// The offloading choices for pipeline stage pp_rank, planned (arguments as memory_plan; the model's own
// offloading is replaced): N layers (every N below --num-layers up to 16 of them, else 16 spread over
// the range) x optimizer fractions 0, 1/4, 1/2, 3/4, 1, without the choice of no offloading at all.
std::vector<OffloadChoice> offload_choices(const StageConfig& model, int make_vocab_size_divisible_by,
                                           const ParallelArgs& opts, int pp_rank, int dp_size, int num_microbatches,
                                           DType compute, const WorkspaceOptions& ws);

// The choice whose plan fits in `free_bytes` and copies the least per step (ties: less memory, then the
// earlier choice); none when no offloading makes it fit.
std::optional<OffloadChoice> cheapest_fitting_offload(const std::vector<OffloadChoice>& choices,
                                                      std::size_t free_bytes);

// "--cpu-offloading-num-layers 4 (1.20 GiB copied to and from host memory per step)": the advice.
std::string offload_advice(const OffloadChoice& c);

}  // namespace gptrain::parallel
