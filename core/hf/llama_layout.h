// What the Llama-layout families share (llama_adapter.cpp): the config keys, the embeddings, attention, norms
// and output layer, and the gated MLP's gate/up/down; each adapter adds what differs (Mixtral's
// block_sparse_moe, Qwen's experts and Q/K norms, ...).
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
// A gated MLP (SwiGLU, GeGLU) of width F: HF `<hf>gate_proj` ; `<hf>up_proj` (F, C) = rows [gate | up] of
// gptrain's `<ours>linear_fc1` (2F, C), `<hf>down_proj` = `<ours>linear_fc2` (C, F); with `bias` their biases
// too. `hf` / `ours` are the MLP's prefixes, e.g. "model.layers.3.mlp." / "decoder.layers.3.mlp.".
void gated_mlp_to_hf(OutList& o, const std::string& hf, const std::string& ours, int64_t F, int64_t C, bool bias);
void gated_mlp_from_hf(OutList& o, const std::string& hf, const std::string& ours, int64_t F, int64_t C, bool bias);
// A whole dense model of Llama's layout: the parts above and every layer's gated MLP (biased when c.mlp_bias()).
std::vector<OutTensor> llama_dense_to_hf(const ModelConfig& c, const TensorStore& ck);
std::vector<OutTensor> llama_dense_from_hf(const ModelConfig& c, const TensorStore& hf);

// The adapter methods every Llama-layout family shares: the HF tensors it may leave unread (the rotary
// inv_freq buffers, a tied lm_head.weight).
class LlamaLayoutAdapter : public Adapter {
 public:
  bool ignorable_hf_tensor(const std::string& name, const checkpoint::ModelDescription& m) const override {
    return llama_ignorable_hf_tensor(name, m.config);
  }
};

// ... and of the dense ones (Llama, Qwen2, Gemma): the whole model read with llama_dense_from_hf.
class LlamaDenseAdapter : public LlamaLayoutAdapter {
 public:
  std::vector<OutTensor> from_hf(const checkpoint::ModelDescription& m, const TensorStore& hf) const override {
    return llama_dense_from_hf(m.config, hf);
  }
};

}  // namespace gptrain::hf
