// What LlamaForCausalLM and MixtralForCausalLM share (llama_adapter.cpp): the config keys, the embeddings,
// attention, norms and output layer; each adapter adds its own MLP (Llama's gate/up/down, Mixtral's
// block_sparse_moe).
#pragma once

#include "core/hf/adapter_util.h"

namespace gptrain::hf {

std::string hf_layer(int i);  // "model.layers.i."

// Throws naming `architecture` when the model uses a switch Llama's layout cannot express.
void require_llama_shape(const ModelConfig& c, const char* architecture);
// config.json keys of the shared parts (the caller adds architectures, model_type and its MLP's keys).
nlohmann::json llama_hf_config(const ModelConfig& c);
// The shared parts of a ModelConfig from config.json (ffn_hidden_size from intermediate_size).
checkpoint::ModelDescription llama_from_hf_config(const nlohmann::json& j, const std::string& where);
// Everything but the MLPs, gptrain -> HF and HF -> gptrain.
void llama_to_hf_except_mlp(OutList& o, const ModelConfig& c);
void llama_from_hf_except_mlp(OutList& o, const ModelConfig& c);
bool llama_ignorable_hf_tensor(const std::string& name, const ModelConfig& c);

}  // namespace gptrain::hf
