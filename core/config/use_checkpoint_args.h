// --use-checkpoint-args (Megatron's load_args_from_checkpoint): the model flags come from the flags the --load
// checkpoint recorded (metadata.json "args"). As Megatron: the sizes (num-layers, hidden-size, ffn-hidden-size,
// seq-length, num-attention-heads, kv-channels, max-position-embeddings; gptrain adds vocab-size and
// make-vocab-size-divisible-by, its padded vocabulary) are taken only when the command line does not give
// them; every other model switch (attention groups, positions, biases, activation, norms, dropout, MoE,
// tokenizer) is taken from the checkpoint even over an explicit flag. A flag the checkpoint does not record
// keeps its value.
#pragma once

#include "core/config/flag_table.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gptrain {

// The "args" object of the checkpoint `load_dir` names (its tracker, or iteration ckpt_step); nullopt when
// there is none (no tracker, or a checkpoint without recorded flags). Throws Error for an unreadable one.
std::optional<nlohmann::json> recorded_checkpoint_args(const std::string& load_dir, std::optional<int64_t> ckpt_step,
                                                       std::string* checkpoint_dir);

// Sets the table's model flags from `recorded` (see above). Returns Megatron's lines: "Setting X to Y from
// checkpoint" per flag set, "Checkpoint did not provide arguments X" per flag it lacks; and, in `overridden`,
// the explicit flags whose value the checkpoint replaced.
std::vector<std::string> apply_checkpoint_args(FlagTable& t, const nlohmann::json& recorded, const std::string& where,
                                               std::vector<std::string>& overridden);

}  // namespace gptrain
