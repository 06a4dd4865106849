#include "core/optim/adamw.h"

#include <algorithm>

namespace gptrain {

AdamW::AdamW(Backend& be, void* params, float* grads, std::size_t total, std::size_t num_decay, AdamWHyper hyper)
    : be_(be), params_(params), grads_(grads), total_(total), num_decay_(num_decay), hyper_(hyper) {
  owns_master_ = be_.compute_dtype() != DType::F32;
  const std::size_t arrays = owns_master_ ? 3 : 2;
  state_ = static_cast<float*>(be_.alloc(std::max<std::size_t>(total_, 1) * arrays * sizeof(float)));
  be_.fill_zero(state_, total_ * 2 * sizeof(float));
  m_ = state_;
  v_ = state_ + total_;
  if (owns_master_) {
    master_ = state_ + 2 * total_;
    be_.convert(master_, DType::F32, params_, be_.compute_dtype(), total_);
  } else {
    master_ = static_cast<float*>(params_);
  }
}

AdamW::~AdamW() { be_.release(state_); }

void AdamW::step(float lr, float weight_decay, float grad_scale) {
  ++steps_;
  const int step = int(steps_);
  const std::size_t es = dtype_size(be_.compute_dtype());
  auto model_at = [&](std::size_t off) -> void* {
    return owns_master_ ? static_cast<char*>(params_) + off * es : nullptr;
  };
  const AdamWHyper& h = hyper_;
  if (num_decay_ > 0)
    be_.adamw_update(master_, model_at(0), grads_, m_, v_, num_decay_, lr, h.beta1, h.beta2, h.eps, weight_decay, step,
                     grad_scale);
  if (total_ > num_decay_) {
    const std::size_t o = num_decay_;
    be_.adamw_update(master_ + o, model_at(o), grads_ + o, m_ + o, v_ + o, total_ - o, lr, h.beta1, h.beta2, h.eps, 0.0f,
                     step, grad_scale);
  }
}

double AdamW::grad_sum_squares() const { return be_.sum_squares(grads_, total_); }

void AdamW::master_to_params() {
  if (owns_master_) be_.convert(params_, be_.compute_dtype(), master_, DType::F32, total_);
}

}  // namespace gptrain
