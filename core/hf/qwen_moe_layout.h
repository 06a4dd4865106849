// The sparse MLP of Qwen2-MoE and Qwen3-MoE in transformers, which both lay it out per expert:
//   mlp.gate.weight (E, C)                        = mlp.router.weight
//   mlp.experts.j.gate_proj ; up_proj (F, C) each = expert j's rows [gate | up] of mlp.experts.linear_fc1.weight
//                                                   (E, 2F, C)
//   mlp.experts.j.down_proj (C, F)                = expert j of mlp.experts.linear_fc2.weight (E, C, F)
// and a dense layer (mlp_only_layers, decoder_sparse_step) as Llama's mlp.{gate,up,down}_proj without biases.
// Config keys: num_experts, num_experts_per_tok, moe_intermediate_size, decoder_sparse_step, mlp_only_layers,
// norm_topk_prob (false: the top-k of the softmax over all experts, not renormalised = --moe-router-pre-softmax;
// true: renormalised over the k, Megatron's default), router_aux_loss_coef (x K into --moe-aux-loss-coeff,
// as Mixtral's, docs/moe-ops.md §4), output_router_logits (only whether transformers' own forward adds the loss).
#pragma once

#include "core/hf/adapter_util.h"

#include <nlohmann/json.hpp>
#include <string>

namespace gptrain::hf {

// c.num_layers must be set. Fills c.moe (num_experts, topk, ffn_hidden_size, layer_pattern, pre_softmax,
// aux_loss_coeff); c.ffn_hidden_size stays the dense layers' intermediate_size.
void qwen_moe_from_hf_config(const nlohmann::json& j, const std::string& where, ModelConfig& c);
// The same keys from c.moe (decoder_sparse_step 1, the dense layers in mlp_only_layers).
void qwen_moe_hf_config(const ModelConfig& c, nlohmann::json& j);
// Throws naming `architecture` when c.moe uses a switch these keys cannot express.
void require_qwen_moe_shape(const ModelConfig& c, const char* architecture);

// Layer i's MLP (router and experts, or the dense MLP when c.moe says layer i is dense), both directions.
void qwen_moe_mlp_to_hf(OutList& o, const ModelConfig& c, int i);
void qwen_moe_mlp_from_hf(OutList& o, const ModelConfig& c, int i);

}  // namespace gptrain::hf
