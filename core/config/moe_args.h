// The mixture-of-experts flags (Megatron's --num-experts and --moe-* names and defaults). moe_config_from_args
// turns them into the model's MoeConfig (core/model/moe_config.h); --moe-per-layer-logging is read by the log.
#pragma once

#include <optional>
#include <string>

namespace gptrain {

struct MoeArgs {
  std::optional<int> num_experts;
  std::string moe_layer_freq = "1";  // an integer or a pattern such as "([0]*3+[1]*1)*2"
  int moe_router_topk = 2;
  std::string moe_router_load_balancing_type = "aux_loss";
  double moe_aux_loss_coeff = 0.0;
  std::optional<double> moe_z_loss_coeff;
  std::string moe_router_score_function = "softmax";
  bool moe_router_pre_softmax = false;
  std::optional<double> moe_router_topk_scaling_factor;
  std::optional<int> moe_ffn_hidden_size;
  std::optional<int> moe_shared_expert_intermediate_size;
  bool moe_shared_expert_gate = false;
  std::optional<double> moe_expert_capacity_factor;
  std::string moe_token_drop_policy = "probs";
  bool moe_pad_expert_input_to_capacity = false;
  bool moe_per_layer_logging = false;
  bool moe_router_enable_expert_bias = false;
  double moe_router_bias_update_rate = 1e-3;
  std::optional<int> moe_router_num_groups;
  std::optional<int> moe_router_group_topk;
  std::optional<double> moe_input_jitter_eps;
  // --moe-use-upcycling: the --load checkpoint is a dense model whose MLPs become every expert of this run's
  // MoE layers (parallel/train/distributed_checkpoint.h); granularity 1 (whole-MLP experts) is the only one.
  bool moe_use_upcycling = false;
};

}  // namespace gptrain
