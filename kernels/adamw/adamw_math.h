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
#include "kernels/dropout/philox.h"

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
// Narrowing rounds to nearest, ties to even (dtype_math.h).
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

// ---- bf16 parameters without a master copy (--bf16-stochastic-rounding) ----
// The step reads the bf16 parameter, computes in fp32 as above and rounds the result to bf16
// stochastically: up (away from zero) with probability (dropped 16 bits) / 2^16, so the expected stored
// value is the fp32 result and updates smaller than half a bf16 ulp still move the weights on average.
// The 16 random bits of an element are a pure function of (seed, step, tensor, element index in the
// global unsharded tensor): Philox4x32-10 with key {lo32(seed), hi32(seed)} and counter
// {lo32(j), hi32(j), tensor_key, step}, word 0 of the result. Dropout's counters (philox.h) keep their
// last two words 0 and step >= 1 here, so the two never share numbers. Any TP/PP/DP layout, and a resumed
// run, draws the same bits for the same weight.

// j for element i of a run of a tensor's local piece whose global indices are base + the row-major
// index with rows of chunk_local elements locally and chunk_global globally (one block of a sharded dim).
GPTRAIN_HD inline uint64_t sr_global_index(uint64_t i, uint64_t base, uint64_t chunk_local, uint64_t chunk_global) {
  return base + (i / chunk_local) * chunk_global + i % chunk_local;
}

GPTRAIN_HD inline uint32_t sr_random_bits(uint64_t seed, uint32_t tensor_key, uint32_t step, uint64_t j) {
  const Philox4 r = philox4x32_10(Philox4{{static_cast<uint32_t>(j), static_cast<uint32_t>(j >> 32), tensor_key, step}},
                                  static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return r.v[0];
}

// x rounded to bf16 with the low 16 bits of `bits` as the threshold: the magnitude is rounded up iff the
// 16 dropped bits exceed the threshold (probability dropped / 2^16). Inf and NaN round to nearest.
GPTRAIN_HD inline uint16_t f32_to_bf16_stochastic(float x, uint32_t bits) {
  const uint32_t u = f32_bits(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return f32_to_bf16(x);
  const uint32_t up = (u & 0xffffu) > (bits & 0xffffu) ? 1u : 0u;
  return static_cast<uint16_t>((u >> 16) + up);  // a carry into the exponent is the next bf16 up
}

// The parameter store: bf16 bits, or (an fp32 buffer, the CPU backend's) the same bf16 value widened.
GPTRAIN_HD inline void param_store_stochastic(BF16State* p, float x, uint32_t bits) {
  p->bits = f32_to_bf16_stochastic(x, bits);
}
GPTRAIN_HD inline void param_store_stochastic(float* p, float x, uint32_t bits) {
  *p = bf16_to_f32(f32_to_bf16_stochastic(x, bits));
}

template <typename P, typename M, typename V>
GPTRAIN_HD inline void adamw_element_stochastic(P* p, M* m, V* v, float grad, const AdamWCoeffs& c, uint32_t bits) {
  float pp = state_load(p), mm = state_load(m), vv = state_load(v);
  adamw_element(&pp, &mm, &vv, grad, c);
  param_store_stochastic(p, pp, bits);
  state_store(m, mm);
  state_store(v, vv);
}

}  // namespace gptrain
