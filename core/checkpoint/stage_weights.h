// Model parameters of a GptStage <-> a checkpoint: every ParamTensor of the stage's layout becomes a
// NamedTensor (global name, local shape, TP slice from its shard blocks) over a host fp32 copy.
// Loading reshards automatically (the checkpoint may have any TP/PP layout, and its vocabulary may be
// padded for another TP size).
#pragma once

#include "core/checkpoint/checkpoint.h"
#include "core/model/gpt_stage.h"

namespace gptrain::checkpoint {

// Tensors (parameters, or their optimizer state "exp_avg.<name>", ...) whose dim 0 is the vocabulary
// padded to a multiple of (make-vocab-size-divisible-by x TP).
bool is_vocab_padded(const std::string& name);
// The slice a layout tensor describes (nullopt when the tensor is whole).
std::optional<Slice> param_slice(const ParamTensor& t);
// Checks that `ck` holds exactly the model tensors of the whole model `stage_config` is a stage of
// (its placement fields are ignored): a missing tensor, one the model has no place for (which a
// load would silently drop, e.g. attention biases loaded with --disable-bias-attention), or one of
// another global shape is an error naming the architecture switches in which the checkpoint's model
// differs. Vocabulary rows may be padded differently (another TP size); at least vocab_size must exist.
void check_model_tensors(const Checkpoint& ck, const StageConfig& stage_config);
// --moe-use-upcycling: `ck` must be a dense model's checkpoint (an MoE one is an Error) holding exactly the
// tensors of `moe_model` with every layer dense (check_model_tensors).
void check_upcycling_source(const Checkpoint& ck, const StageConfig& moe_model);
// With load_optim, `ck` must hold optimizer state (a checkpoint saved with --no-save-optim has none): the
// error says how to start the optimizer fresh instead. A missing optimizer file of a checkpoint whose save
// wrote them is reported as damage.
void check_optimizer_state(const Checkpoint& ck, bool load_optim);
// check_model_tensors, then reads every parameter of the stage from `ck` and uploads it in the
// compute dtype. Errors name missing tensors or shape mismatches (e.g. a checkpoint of another shape).
void load_stage_parameters(GptStage& stage, const Checkpoint& ck);

// --moe-router-enable-expert-bias: the routers' biases are state, not parameters; metadata.json keeps them
// under moe_router.expert_bias, {global MoE layer: [E floats]} (JSON numbers round-trip every float).
// expert_bias_to_json: from (num_layers, E) values. read_expert_bias: the (num_layers, E) values for a model
// `c` (zeros for dense layers; all zeros, said in the log, when the checkpoint has none); empty when `c` has
// no expert bias. A checkpoint with a bias loads only into a model with one; a malformed entry is an Error
// naming metadata.json and the layer.
nlohmann::json expert_bias_to_json(const std::vector<float>& bias, const MoeConfig& m);
std::vector<float> read_expert_bias(const Checkpoint& ck, const ModelConfig& c);

}  // namespace gptrain::checkpoint
