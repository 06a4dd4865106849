// One AdamW step on one element, shared by the twins. The operation order follows
// torch.optim.AdamW (single-tensor path) so the parity test against torch agrees to fp32 rounding:
//   p  = p * (1 - lr*wd)                       (decoupled decay with the pre-step weight)
//   m  = m + (1 - beta1) * (g - m)              (torch's lerp)
//   v  = v * beta2 + (1 - beta2) * g * g
//   p  = p - (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),  bc1 = 1 - beta1^step, bc2 = 1 - beta2^step
// which is master -= lr * (mhat / (sqrt(vhat) + eps) + wd * master) of the Backend contract.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/common/dtype_math.h"
#include "kernels/common/hd.h"

namespace gptrain {

struct AdamWCoeffs {
  float lr, beta1, beta2, eps;
  float decay;       // 1 - lr * weight_decay
  float step_size;   // lr / (1 - beta1^step)
  float bc2_sqrt;    // sqrt(1 - beta2^step)
  float grad_scale;  // multiplies the raw gradient first (clipping, 1/loss_scale)
};

// Host-side: the per-step constants (computed in double, then rounded once).
inline AdamWCoeffs adamw_coeffs(float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                                float grad_scale) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(beta1), step);
  const double bc2 = 1.0 - std::pow(static_cast<double>(beta2), step);
  return AdamWCoeffs{lr,
                     beta1,
                     beta2,
                     eps,
                     static_cast<float>(1.0 - static_cast<double>(lr) * weight_decay),
                     static_cast<float>(lr / bc1),
                     static_cast<float>(std::sqrt(bc2)),
                     grad_scale};
}

GPTRAIN_HD inline void adamw_element(float* p, float* m, float* v, float grad, const AdamWCoeffs& c) {
  const float g = grad * c.grad_scale;
  float pm = *p * c.decay;
  const float mm = *m + (1.0f - c.beta1) * (g - *m);
  const float vv = *v * c.beta2 + (1.0f - c.beta2) * g * g;
  const float denom = sqrtf(vv) / c.bc2_sqrt + c.eps;
  pm = pm - c.step_size * (mm / denom);
  *p = pm;
  *m = mm;
  *v = vv;
}

// Optimizer state in a narrower storage dtype (--exp-avg-dtype / --exp-avg-sq-dtype bf16, Megatron's
// precision-aware optimizer): the step's maths stays fp32; each stored value is widened exactly on
// load and narrowed on store. BF16State is a distinct type so the storage dtype picks the overloads.
// Narrowing rounds to nearest, ties to even (dtype_math.h); a stochastic-rounding store would be one
// more storage type with its own state_store taking random bits, the step itself unchanged.
struct BF16State {
  uint16_t bits;
};

GPTRAIN_HD inline float state_load(const float* s) { return *s; }
GPTRAIN_HD inline float state_load(const BF16State* s) { return bf16_to_f32(s->bits); }
GPTRAIN_HD inline void state_store(float* s, float x) { *s = x; }
GPTRAIN_HD inline void state_store(BF16State* s, float x) { s->bits = f32_to_bf16(x); }

// adamw_element on stored state: master P, moments M and V each fp32 or BF16State.
template <typename P, typename M, typename V>
GPTRAIN_HD inline void adamw_element_stored(P* p, M* m, V* v, float grad, const AdamWCoeffs& c) {
  float pp = state_load(p), mm = state_load(m), vv = state_load(v);
  adamw_element(&pp, &mm, &vv, grad, c);
  state_store(p, pp);
  state_store(m, mm);
  state_store(v, vv);
}

}  // namespace gptrain
