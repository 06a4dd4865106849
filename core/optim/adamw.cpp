#include "core/optim/adamw.h"

#include "core/common/error.h"

#include <algorithm>

namespace gptrain {

AdamW::AdamW(Backend& be, void* params, std::size_t total, std::size_t num_decay, AdamWHyper hyper)
    : AdamW(be, params, total, decay_split_ranges(total, num_decay), hyper, {Piece{0, total, 0}}, total) {}

AdamW::AdamW(Backend& be, void* params, std::size_t total, std::vector<ParamGroupRange> groups, AdamWHyper hyper,
             std::vector<Piece> pieces, std::size_t local_total)
    : be_(be),
      params_(params),
      total_(total),
      groups_(std::move(groups)),
      hyper_(hyper),
      pieces_(std::move(pieces)),
      local_total_(local_total) {
  std::size_t at = 0;
  for (const ParamGroupRange& g : groups_) {
    check(g.lo == at && g.lo < g.hi, "AdamW: group range [{}, {}) does not continue at {}", g.lo, g.hi, at);
    at = g.hi;
  }
  check(at == total_, "AdamW: the group ranges cover {} of {} parameters", at, total_);
  for (const Piece& p : pieces_)
    check(p.lo <= p.hi && p.hi <= total_ && p.local + (p.hi - p.lo) <= local_total_,
          "AdamW: piece [{}, {}) at {} does not fit {} parameters / {} state elements", p.lo, p.hi, p.local, total_,
          local_total_);
  owns_master_ = be_.compute_dtype() != DType::F32;
  const std::size_t arrays = owns_master_ ? 3 : 2;
  state_ = static_cast<float*>(be_.alloc(std::max<std::size_t>(local_total_, 1) * arrays * sizeof(float)));
  be_.fill_zero(state_, local_total_ * arrays * sizeof(float));
  m_ = state_;
  v_ = state_ + local_total_;
  if (owns_master_) {
    master_ = state_ + 2 * local_total_;
    const std::size_t es = dtype_size(be_.compute_dtype());
    for (const Piece& p : pieces_)  // the masters start as the fp32 values of the parameters
      if (p.hi > p.lo)
        be_.convert(master_ + p.local, DType::F32, static_cast<char*>(params_) + p.lo * es, be_.compute_dtype(),
                    p.hi - p.lo);
  } else {
    master_ = static_cast<float*>(params_);
  }
}

AdamW::~AdamW() { be_.release(state_); }

void AdamW::step(const float* grads, float lr, float decoupled_lr, float weight_decay, float grad_scale) {
  ++steps_;
  const int step = int(steps_);
  const std::size_t es = dtype_size(be_.compute_dtype());
  const AdamWHyper& h = hyper_;
  for (const Piece& p : pieces_) {
    for (const ParamGroupRange& g : groups_) {
      const std::size_t a = std::max(p.lo, g.lo), b = std::min(p.hi, g.hi);
      if (a >= b) continue;
      const std::size_t l = p.local + (a - p.lo);
      // fp32: the parameters are the masters, updated in place at their global offset.
      float* master = owns_master_ ? master_ + l : static_cast<float*>(params_) + a;
      void* param = owns_master_ ? static_cast<char*>(params_) + a * es : nullptr;
      be_.adamw_update(master, param, grads + l, m_ + l, v_ + l, b - a, g.decoupled_lr ? decoupled_lr : lr, h.beta1,
                       h.beta2, h.eps, g.decay ? weight_decay : 0.0f, step, grad_scale);
    }
  }
}

}  // namespace gptrain
