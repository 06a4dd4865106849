// What the training log says about the MoE routers (Megatron's track_moe_metrics): the losses the
// iteration line adds, and the per-layer line of --moe-per-layer-logging.
//
// Megatron sums each layer's loss (coefficient 1) over the step's micro-batches, scales by 1 /
// micro-batches, and logs the sum over layers / the number of MoE layers; the line then averages the
// iterations of the log interval like "lm loss". It reduces over pipeline stages but not over DP (the line
// shows the last rank's replica); gptrain also averages over the DP replicas (MoeStepStats), so the value is
// the same for every TP/PP/DP layout of the same global batch.
#pragma once

#include "core/model/moe_config.h"
#include "core/train/model_runner.h"

#include <string>
#include <utility>
#include <vector>

namespace gptrain {

// The iteration line's MoE losses in Megatron's order (its tracker's: z_loss is recorded before the
// load-balancing loss in the router): ("z_loss", x) with --moe-z-loss-coeff, then ("load_balancing_loss" or
// "seq_load_balancing_loss", x) with a load-balancing loss. Empty without MoE layers.
std::vector<std::pair<std::string, float>> moe_log_losses(const MoeConfig& m, const MoeStepStats& s);

// --moe-per-layer-logging: one line with each MoE layer's losses and tokens per expert (min / max / std over
// the experts, top-k choices before capacity, summed over the step's micro-batches and replicas).
std::string format_moe_layer_line(const MoeConfig& m, const MoeStepStats& s, int64_t iteration);

// --moe-per-layer-logging's TensorBoard scalars, Megatron's tags: ("moe/z_loss_layer_{i}", x) and
// ("moe/load_balancing_loss_layer_{i}", x) for every layer i (0 for dense layers, as Megatron's tracker).
std::vector<std::pair<std::string, double>> moe_layer_scalars(const MoeConfig& m, const MoeStepStats& s);

}  // namespace gptrain
