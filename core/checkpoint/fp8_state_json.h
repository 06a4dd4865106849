// The FP8 scaling state of --fp8-recipe delayed (core/model/fp8_scaling.h) in a checkpoint's metadata.json:
//   "fp8": {"format": "e4m3"|"hybrid", "recipe": "delayed", "margin": m, "amax_history_len": L,
//           "amax_compute_algo": "most_recent"|"max", "wgrad": bool,
//           "state": {"<global layer>": [12 x (L + 2) numbers]}}
// each layer's tensors in fp8_tensor_index order, each [amax history (L) | scale | scale_inv]. JSON numbers
// round-trip every float; a non-finite amax is written as the string "inf" / "-inf" / "nan". The state is
// the model's, the same on every rank, so any TP / PP / DP layout reads it.
#pragma once

#include "core/checkpoint/checkpoint.h"
#include "core/model/model_config.h"

#include <nlohmann/json.hpp>
#include <vector>

namespace gptrain::checkpoint {

nlohmann::json fp8_state_to_json(const std::vector<float>& state, const StageConfig& c);
// The state to resume for a run of config c: empty when the run does not use delayed scaling; the initial
// state when the checkpoint has none (a checkpoint of a run without FP8); else the saved one. Throws Error
// naming --fp8-amax-history-len when the histories differ in length, or the field when it is malformed.
std::vector<float> read_fp8_state(const Checkpoint& ck, const StageConfig& c);

}  // namespace gptrain::checkpoint
