// Megatron's activation-recomputation flags (--recompute-*, and the older spellings of 2021-2022 that
// Megatron's sc21 scripts pass), validated with Megatron's rules and turned into the model's
// RecomputeConfig (core/model/recompute.h).
#pragma once

#include "core/model/recompute.h"

#include <optional>
#include <string>
#include <vector>

namespace gptrain {

struct RecomputeArgs {
  bool recompute_activations = false;                // Megatron's alias of --recompute-granularity selective
  std::optional<std::string> recompute_granularity;  // full | selective
  std::optional<std::string> recompute_method;       // uniform | block (full only)
  std::optional<int> recompute_num_layers;           // N (full only)
  std::vector<std::string> recompute_modules;        // selective; empty: core_attn (Megatron's default)
  bool distribute_saved_activations = false;         // full only, TP > 1 without sequence parallelism
  // Megatron's older spellings: --checkpoint-activations = --activations-checkpoint-method uniform, a
  // full recompute of --activations-checkpoint-num-layers layers per group (default 1).
  bool checkpoint_activations = false;
  std::optional<std::string> activations_checkpoint_method;
  std::optional<int> activations_checkpoint_num_layers;
};

// Megatron's validation (arguments.py and TransformerConfig) of the flags' grammar: full needs a method and
// a number of layers, selective takes neither, modules name known ones. Throws Error naming the flag.
// num_layers: --num-layers, for the messages. What the result needs of the layout (--distribute-saved-
// activations: full, TP > 1, no sequence parallelism) is checked with the stage (StageConfig::check_stage).
RecomputeConfig recompute_config_from_args(const RecomputeArgs& r, int num_layers);

}  // namespace gptrain
