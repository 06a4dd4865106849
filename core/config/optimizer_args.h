// The optimizer (AdamW: --adam-beta1/2, --adam-eps, --clip-grad) and mixed precision (--bf16/--fp16 and
// fp16's loss scaling). Weight decay and its schedule live with the LR schedule (core/schedule).
#pragma once

#include <optional>

namespace gptrain {

struct OptimizerArgs {
  double adam_beta1 = 0.9, adam_beta2 = 0.999, adam_eps = 1e-8;
  double clip_grad = 1.0;  // global L2 norm; 0 disables
};

struct MixedPrecisionArgs {
  bool fp16 = false, bf16 = false;
  std::optional<double> loss_scale;  // static scale; unset with --fp16: dynamic
  double initial_loss_scale = 4294967296.0, min_loss_scale = 1.0;
  int loss_scale_window = 1000, hysteresis = 2;
};

}  // namespace gptrain
