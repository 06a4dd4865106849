// The optimizer (AdamW: --adam-beta1/2, --adam-eps, --clip-grad) and mixed precision (--bf16/--fp16 and
// fp16's loss scaling). Weight decay and its schedule live with the LR schedule (core/schedule).
#pragma once

#include <optional>
#include <string>

namespace gptrain {

struct OptimizerArgs {
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_eps = 1e-8;
  double clip_grad = 1.0;     // global L2 norm; 0 disables
  double sgd_momentum = 0.9;  // --optimizer sgd (the choice itself is ParallelArgs::optimizer)
  // --optimizer muon (parallel/data_parallel/muon_optimizer.h), Megatron's command-line defaults
  double muon_momentum = 0.9;
  bool muon_no_split_qkv = false, muon_nesterov = false;
  std::string muon_scale_mode = "spectral", muon_fp32_matmul_prec = "medium", muon_coefficient_type = "quintic";
  std::string muon_tp_mode = "duplicated";
  int muon_num_ns_steps = 5;
  double muon_extra_scale_factor = 1.0;
};

struct MixedPrecisionArgs {
  bool fp16 = false, bf16 = false;
  std::optional<double> loss_scale;  // static scale; unset with --fp16: dynamic
  double initial_loss_scale = 4294967296.0, min_loss_scale = 1.0;
  int loss_scale_window = 1000, hysteresis = 2;
  // FP8 training (core/model/fp8_config.h), Megatron's flags and defaults.
  std::optional<std::string> fp8_format;  // --fp8-format e4m3 | hybrid; unset: no FP8
  std::string fp8_recipe = "delayed";
  int fp8_margin = 0, fp8_amax_history_len = 1;
  std::string fp8_amax_compute_algo = "most_recent";
  bool no_fp8_wgrad = false, first_last_layers_bf16 = false;
  int num_layers_at_start_in_bf16 = 1, num_layers_at_end_in_bf16 = 1;
};

}  // namespace gptrain
