#include "core/optim/loss_scaler.h"

#include "core/common/error.h"

#include <algorithm>

namespace gptrain {

void LossScaler::update(bool found_inf) {
  if (kind_ != Kind::Dynamic) return;
  if (found_inf) {
    growth_tracker_ = 0;
    --hysteresis_tracker_;
    if (hysteresis_tracker_ <= 0) scale_ = std::max(scale_ * 0.5, min_scale_);
  } else {
    ++growth_tracker_;
    if (growth_tracker_ == window_) {
      growth_tracker_ = 0;
      hysteresis_tracker_ = hysteresis_;
      scale_ *= 2.0;
    }
  }
}

nlohmann::json LossScaler::state_json() const {
  const char* k = kind_ == Kind::None ? "none" : kind_ == Kind::Constant ? "constant" : "dynamic";
  return {
      {"kind", k}, {"scale", scale_}, {"growth_tracker", growth_tracker_}, {"hysteresis_tracker", hysteresis_tracker_}};
}

void LossScaler::load_state_json(const nlohmann::json& j) {
  if (kind_ == Kind::None || j.is_null() || j.empty()) return;
  try {
    if (kind_ == Kind::Dynamic) {
      scale_ = j.at("scale").get<double>();
      growth_tracker_ = j.at("growth_tracker").get<int>();
      hysteresis_tracker_ = j.at("hysteresis_tracker").get<int>();
    }
  } catch (const nlohmann::json::exception& e) {
    fail("checkpoint metadata loss_scale: {} (expected scale, growth_tracker, hysteresis_tracker)", e.what());
  }
}

}  // namespace gptrain
