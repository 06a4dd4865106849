// The "model" object of a checkpoint's metadata.json (docs/checkpoint-format.md): the architecture a
// converter or a loader needs, as JSON, to and from ModelConfig. Only architecture fields are
// stored; placement (TP rank, layer range) and batch shape are the loading run's business.
#pragma once

#include "core/model/model_config.h"

#include <nlohmann/json.hpp>
#include <string>

namespace gptrain::checkpoint {

struct ModelDescription {
  // The Hugging Face family (core/hf/family.h: "gpt2", "llama", "gpt_neox", "gptj", "mixtral", "moe"); empty
  // when a checkpoint records none (core/hf's family_of then picks it from the switches).
  std::string family;
  std::string tokenizer_type = "GPT2BPETokenizer";
  ModelConfig config;  // architecture fields (finalized: derived sizes filled)
};

nlohmann::json model_to_json(const ModelDescription& m);
// Throws Error naming `where` and the field when a field is missing or of the wrong type.
// Optional fields (rotary_*, add_qkv_bias, disable_bias_attention, output_layer_bias, ...) default as ModelConfig does;
// a missing "family" stays empty.
ModelDescription model_from_json(const nlohmann::json& j, const std::string& where);

// The architecture switches in which a checkpoint's "model" object differs from a run's config, as
// "name (checkpoint X, this run Y)" joined by "; " (empty when none differ or the object is not a
// model description): the hint an error about missing tensors needs.
std::string model_differences(const nlohmann::json& checkpoint_model, const ModelConfig& run);

}  // namespace gptrain::checkpoint
