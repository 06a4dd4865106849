// What Qwen2ForCausalLM and Qwen2MoeForCausalLM share (qwen2_adapter.cpp): Llama's layout (llama_layout.h)
// with biases on q_proj, k_proj and v_proj only (gptrain's --add-qkv-bias --disable-bias-linear), head_dim
// derived as hidden_size / num_attention_heads, and the sliding-window keys, of which only
// use_sliding_window false is accepted.
#pragma once

#include "core/hf/llama_layout.h"

namespace gptrain::hf {

// Throws naming `architecture` when the attention, norms or embeddings are not Qwen2's.
void require_qwen2_shape(const ModelConfig& c, const char* architecture);
// llama_hf_config plus Qwen2's keys (the caller adds architectures, model_type and its MLP's keys).
nlohmann::json qwen2_hf_config(const ModelConfig& c);
// llama_from_hf_config plus the QKV bias; refuses use_sliding_window true and a head_dim transformers 4.46
// would not use.
checkpoint::ModelDescription qwen2_from_hf_config(const nlohmann::json& j, const std::string& where);

}  // namespace gptrain::hf
