#include "core/model/fp8_scaling.h"

#include <cmath>
#include <limits>

namespace gptrain {

const char* fp8_recipe_name(Fp8Recipe r) { return r == Fp8Recipe::Delayed ? "delayed" : "tensorwise"; }

float fp8_max_value(Fp8Kind k) { return k == Fp8Kind::E4M3 ? 448.0f : 57344.0f; }

std::vector<float> fp8_initial_state(int num_layers, const Fp8Config& c) {
  const int stride = fp8_state_stride(c), L = c.amax_history_len;
  std::vector<float> s(std::size_t(num_layers) * kFp8TensorsPerLayer * stride, 0.0f);
  for (std::size_t e = 0; e < s.size(); e += stride) s[e + L] = s[e + L + 1] = 1.0f;
  return s;
}

void fp8_delayed_update(float* entry, int history_len, float fp8_max, int margin, bool amax_max) {
  float* h = entry;
  const float last = h[0];
  float amax = 0.0f;
  // Roll in place, left to right: slot i reads slot i + 1 before that slot is written.
  for (int i = 0; i < history_len; ++i) {
    const float a = i < history_len - 1 ? h[i + 1] : last;
    amax = std::fmax(amax, a);
    h[i] = i > 0 ? a : 0.0f;
  }
  if (!amax_max) amax = last;
  float& scale = entry[history_len];
  float& scale_inv = entry[history_len + 1];
  float s = scale;
  if (std::isfinite(amax) && amax > 0.0f) s = (fp8_max / amax) / std::ldexp(1.0f, margin);
  if (std::isinf(s)) s = std::numeric_limits<float>::max();
  scale = s;
  scale_inv = 1.0f / s;
}

void fp8_delayed_update_all(std::vector<float>& state, const Fp8Config& c) {
  const int stride = fp8_state_stride(c);
  const std::size_t n = state.size() / stride;
  for (std::size_t t = 0; t < n; ++t) {
    const bool grad = int(t % kFp8TensorsPerLayer) % 3 == int(Fp8Role::OutputGrad);
    const float mx = fp8_max_value(grad ? c.grad_kind() : c.forward_kind());
    fp8_delayed_update(state.data() + t * stride, c.amax_history_len, mx, c.margin, c.amax_max);
  }
}

float fp8_current_scale(float amax, float fp8_max) {
  if (amax == 0.0f || !std::isfinite(amax)) return 1.0f;
  float s = fp8_max / amax;
  if (std::isinf(s)) s = std::numeric_limits<float>::max();
  return s;
}

}  // namespace gptrain
