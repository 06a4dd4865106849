// Loss scaling for fp16 (Megatron's ConstantGradScaler / DynamicGradScaler), and the unit scaler of
// fp32/bf16 runs. The training loop multiplies the loss gradient by scale(), checks the gradients for
// inf/NaN after backward, calls update(found_inf), and skips the optimizer step when found_inf.
// Plain CPU logic: tests drive it with synthetic overflow sequences.
#pragma once

#include "core/config/optimizer_args.h"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace gptrain {

class LossScaler {
 public:
  enum class Kind { None, Constant, Dynamic };

  static LossScaler none() { return LossScaler(Kind::None, 1.0, 1.0, 1, 1); }
  static LossScaler constant(double scale) { return LossScaler(Kind::Constant, scale, scale, 1, 1); }
  // --initial-loss-scale, --min-loss-scale, --loss-scale-window, --hysteresis
  static LossScaler dynamic(double initial, double min_scale, int window, int hysteresis) {
    return LossScaler(Kind::Dynamic, initial, min_scale, window, hysteresis);
  }
  // The scaler the precision flags ask for: none without --fp16, constant with --loss-scale, else dynamic.
  static LossScaler from_flags(const MixedPrecisionArgs& p) {
    if (!p.fp16) return none();
    if (p.loss_scale) return constant(*p.loss_scale);
    return dynamic(p.initial_loss_scale, p.min_loss_scale, p.loss_scale_window, p.hysteresis);
  }

  Kind kind() const { return kind_; }
  double scale() const { return scale_; }
  // After each iteration's backward. Dynamic: an overflow costs one hysteresis credit and halves the
  // scale (not below the minimum) once the credits are gone; `window` clean iterations in a row double it
  // and refill the credits.
  void update(bool found_inf);

  nlohmann::json state_json() const;              // {"kind", "scale", "growth_tracker", "hysteresis_tracker"}
  void load_state_json(const nlohmann::json& j);  // restores scale and trackers (kind stays from the flags)

 private:
  LossScaler(Kind k, double scale, double min_scale, int window, int hysteresis)
      : kind_(k),
        scale_(scale),
        min_scale_(min_scale),
        window_(window),
        hysteresis_(hysteresis),
        hysteresis_tracker_(hysteresis) {}
  Kind kind_;
  double scale_;
  double min_scale_;
  int window_;
  int hysteresis_;
  int growth_tracker_ = 0;
  int hysteresis_tracker_;
};

}  // namespace gptrain
