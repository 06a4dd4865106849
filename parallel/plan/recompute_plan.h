// What each recomputation knob does to a stage's memory plan, and the cheapest one that makes a plan
// fit: every recomputation choice (selective module sets, full block N and full uniform N for every N up
// to 16 and a spread of larger ones) is planned with memory_plan and ranked by the forward work its replays
// add, so the advice "fits with --recompute-granularity selective" is computed, not guessed.
#pragma once

#include "core/model/model_config.h"
#include "parallel/plan/memory_plan.h"

#include <optional>
#include <string>
#include <vector>

namespace gptrain::parallel {

struct RecomputeChoice {
  RecomputeConfig recompute;
  std::string flags;           // "--recompute-granularity full --recompute-method block --recompute-num-layers 2"
  double extra_forward = 0.0;  // replayed forward FLOPs / the stage's forward FLOPs
  MemoryPlan plan;             // the stage's plan with this choice
};

// The flags that select r ("" for none).
std::string recompute_flags(const RecomputeConfig& r);
// Forward FLOPs of local layer li of a finalized chunk config per micro-batch (matmuls, causal attention;
// an MoE layer's router, the K routed expert rows per token and the shared expert).
double layer_forward_flops(const StageConfig& chunk, int li);

// The N of full recomputation's choices for a stage whose largest chunk has `most` layers: every N up to 16,
// then 16 values spread up to `most` (most / 2 and most among them), so that the choices (a plan each, each
// linear in the layers) keep --dry-run linear in the layers.
std::vector<int> full_recompute_layer_counts(int most);

// Every recomputation choice for pipeline stage pp_rank, planned (arguments as memory_plan): none,
// selective (core_attn; + mlp; + layernorm; with MoE layers core_attn + mlp + moe), full uniform N and full block N for
// each N of full_recompute_layer_counts (with TP > 1 and no sequence parallelism, each also with
// --distribute-saved-activations).
std::vector<RecomputeChoice> recompute_choices(const StageConfig& model, int make_vocab_size_divisible_by,
                                               const ParallelArgs& opts, int pp_rank, int dp_size, int num_microbatches,
                                               DType compute, const WorkspaceOptions& ws);

// The choice with the least replayed work whose plan fits in `free_bytes` (ties: less memory, then the
// earlier choice); none when no recomputation makes it fit.
std::optional<RecomputeChoice> cheapest_fitting_recompute(const std::vector<RecomputeChoice>& choices,
                                                          std::size_t free_bytes);

// Activation bytes per layer and micro-batch from Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models", 16-bit activations): sbh(34 + 5as/h) without
// recomputation (divided by t with sequence parallelism, sbh(10 + 24/t + 5as/(ht)) without), 34sbh/t
// with selective recomputation and sequence parallelism, 2sbh (/t with sequence parallelism) for full.
struct PaperActivations {
  double none = 0, selective = 0, full = 0;
};
PaperActivations paper_activations_per_layer(const StageConfig& model, int tp, bool sequence_parallel);

}  // namespace gptrain::parallel
