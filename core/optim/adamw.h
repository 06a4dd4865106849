// AdamW over a stage's flat parameter buffer: one fp32 arena for the optimizer state (exp_avg,
// exp_avg_sq, and the fp32 master weights when the compute dtype is bf16/fp16), laid out with the same
// offsets as the parameter and gradient buffers. The layout puts all weight-decayed tensors first, so
// a step is two fused Backend::adamw_update launches: [0, num_decay) with weight decay and
// [num_decay, total) without (biases and norm weights, as Megatron).
#pragma once

#include "kernels/backend.h"

#include <cstddef>
#include <cstdint>

namespace gptrain {

struct AdamWHyper {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
};

class AdamW {
 public:
  // params: the model's parameters (compute dtype, `total` elements); grads: fp32 main grads.
  // The first `num_decay` elements get weight decay. Masters start as fp32 copies of params.
  AdamW(Backend& be, void* params, float* grads, std::size_t total, std::size_t num_decay, AdamWHyper hyper);
  ~AdamW();
  AdamW(const AdamW&) = delete;
  AdamW& operator=(const AdamW&) = delete;

  // One update: g = grad * grad_scale (unscale and clip folded in); steps() advances first, so the
  // bias correction of the first update uses step 1.
  void step(float lr, float weight_decay, float grad_scale);

  // Sum of squares of the local gradients (fp64; +inf/NaN if any is not finite).
  double grad_sum_squares() const;

  int64_t steps() const { return steps_; }
  void set_steps(int64_t s) { steps_ = s; }
  std::size_t size() const { return total_; }
  float* exp_avg() { return m_; }
  float* exp_avg_sq() { return v_; }
  // fp32 master weights: the parameters themselves when the compute dtype is fp32.
  float* master() { return master_; }
  bool has_separate_master() const { return owns_master_; }
  // After master() was overwritten (checkpoint load): refresh the compute-dtype parameters.
  void master_to_params();

 private:
  Backend& be_;
  void* params_;
  float* grads_;
  std::size_t total_, num_decay_;
  AdamWHyper hyper_;
  float* state_ = nullptr;  // one allocation: m | v | master (when separate)
  float* m_ = nullptr;
  float* v_ = nullptr;
  float* master_ = nullptr;
  bool owns_master_ = false;
  int64_t steps_ = 0;
};

}  // namespace gptrain
