// The mixture-of-experts part of a ModelConfig (Megatron's --num-experts and --moe-* flags): which layers
// replace their dense MLP by an MoE MLP, the router, the experts, capacity and the auxiliary losses. Which
// experts a rank holds is its StagePlacement (ep_size, ep_rank). The layer itself is moe_layer.cpp; the
// ops are kernels/moe/ (docs/moe-ops.md for their semantics).
#pragma once

#include "kernels/backend.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gptrain {

// --moe-router-load-balancing-type. Sinkhorn: training chooses experts by Sinkhorn-balanced scores (no
// auxiliary loss; kernels/backend.h moe_sinkhorn_router_forward).
enum class MoeBalance : uint8_t { None, AuxLoss, SeqAuxLoss, Sinkhorn };

struct MoeConfig {
  int num_experts = 0;  // --num-experts (E); 0: every layer is dense
  // Per global layer: 1 = MoE MLP, 0 = dense MLP (--moe-layer-freq, resolved by moe_layer_pattern).
  std::vector<int> layer_pattern;
  int topk = 2;                                      // --moe-router-topk (K)
  MoeScore score = MoeScore::Softmax;                // --moe-router-score-function
  bool pre_softmax = false;                          // --moe-router-pre-softmax
  float topk_scaling_factor = 0.0f;                  // --moe-router-topk-scaling-factor; 0: none
  int ffn_hidden_size = 0;                           // --moe-ffn-hidden-size (FE); 0: the dense ffn size
  int shared_expert_intermediate_size = 0;           // --moe-shared-expert-intermediate-size (FS); 0: none
  bool shared_expert_gate = false;                   // --moe-shared-expert-gate: shared output x sigmoid(x w_gate)
  double capacity_factor = -1.0;                     // --moe-expert-capacity-factor; < 0: dropless
  MoeDropPolicy drop_policy = MoeDropPolicy::Probs;  // --moe-token-drop-policy
  bool pad_to_capacity = false;                      // --moe-pad-expert-input-to-capacity
  MoeBalance balance = MoeBalance::AuxLoss;          // --moe-router-load-balancing-type
  float aux_loss_coeff = 0.0f;                       // --moe-aux-loss-coeff
  float z_loss_coeff = 0.0f;                         // --moe-z-loss-coeff; 0: no z-loss
  // Aux-loss-free balancing (--moe-router-enable-expert-bias): a per-expert bias added to the sigmoid
  // scores for the choice only, moved by +-bias_update_rate after each step toward equal token counts.
  bool expert_bias = false;
  float bias_update_rate = 1e-3f;  // --moe-router-bias-update-rate
  int num_groups = 0;              // --moe-router-num-groups; 0: the choice is not group-limited
  int group_topk = 0;              // --moe-router-group-topk
  float input_jitter_eps = 0.0f;   // --moe-input-jitter-eps: router input x U(1 - eps, 1 + eps); 0: none

  bool enabled() const { return num_experts > 0; }
  bool is_moe_layer(int global_layer) const {
    return enabled() && global_layer >= 0 && global_layer < int(layer_pattern.size()) &&
           layer_pattern[global_layer] != 0;
  }
  int num_moe_layers() const;
  bool balance_loss_on() const { return balance != MoeBalance::None && aux_loss_coeff != 0.0f; }
  bool sinkhorn() const { return balance == MoeBalance::Sinkhorn; }
  bool z_loss_on() const { return z_loss_coeff != 0.0f; }
  // Whether the router's choice differs from the plain top-k of the scores the balance loss reads.
  bool modified_choice() const { return expert_bias || num_groups > 0; }
  // Megatron's tracker names of the logged losses: "load_balancing_loss" / "seq_load_balancing_loss".
  const char* balance_loss_name() const {
    return balance == MoeBalance::SeqAuxLoss ? "seq_load_balancing_loss" : "load_balancing_loss";
  }
};

// Megatron's --moe-layer-freq: an integer N (layer i is MoE when i % N == 0) or a Python list expression
// of 0/1 such as "([0]*3+[1]*1)*2" (lists, parentheses, + and * by an integer) whose length must be
// num_layers. Throws Error naming the flag and what is wrong.
std::vector<int> moe_layer_pattern(const std::string& freq, int num_layers);

// Megatron's aux-loss-free bias update (get_updated_expert_bias) of every MoE layer after a training step:
// bias[l][e] += sign(mean_e' n[l][e'] - n[l][e]) * bias_update_rate in fp32, n the tokens each expert kept
// (after capacity) over the step's global batch. bias is (num_layers, E); counts has one row per layer.
void update_expert_bias(std::vector<float>& bias, const std::vector<std::vector<double>>& counts, const MoeConfig& m);

MoeBalance parse_moe_balance(const std::string& s);  // throws naming the choices
MoeScore parse_moe_score(const std::string& s);
MoeDropPolicy parse_moe_drop_policy(const std::string& s);

}  // namespace gptrain
