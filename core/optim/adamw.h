// AdamW over a model's flat parameter buffer, or over pieces of it (the data-parallel shards a
// distributed optimizer owns): one fp32 arena for the state (exp_avg, exp_avg_sq, and the fp32 master
// weights when the compute dtype is bf16/fp16). State arrays are indexed by "local" offsets: piece
// [lo, hi) of the parameters lives at [local, local + hi - lo) of every state array and of the gradients
// handed to step(). The parameters are cut into group ranges (param_groups.h: weight decay on or off,
// default or --decoupled-lr learning rate); each piece is one fused Backend::adamw_update launch per group
// range it meets (the layout puts all weight-decayed tensors first, so without --decoupled-lr at most two:
// below num_decay with weight decay, the rest, biases and norm weights, without).
#pragma once

#include "core/optim/param_groups.h"
#include "kernels/backend.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gptrain {

struct AdamWHyper {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
};

class AdamW {
 public:
  struct Piece {
    std::size_t lo = 0, hi = 0;  // flat range of the parameters
    std::size_t local = 0;       // its offset in the state arrays
  };

  // params: the model's parameters (compute dtype, `total` elements); the first `num_decay` elements get
  // weight decay, all follow the default LR. The whole buffer is updated (local offsets = global ones).
  // Masters start as the fp32 values of the parameters.
  AdamW(Backend& be, void* params, std::size_t total, std::size_t num_decay, AdamWHyper hyper);
  // groups: [0, total) cut into group ranges (param_group_ranges). Only `pieces` are updated (possibly
  // none); local_total: elements of each state array.
  AdamW(Backend& be, void* params, std::size_t total, std::vector<ParamGroupRange> groups, AdamWHyper hyper,
        std::vector<Piece> pieces, std::size_t local_total);
  ~AdamW();
  AdamW(const AdamW&) = delete;
  AdamW& operator=(const AdamW&) = delete;

  // One update of every piece: g = grads[local] * grad_scale (unscale and clip folded in); steps()
  // advances first, so the bias correction of the first update uses step 1. The decoupled group's
  // elements use decoupled_lr, the others lr.
  void step(const float* grads, float lr, float decoupled_lr, float weight_decay, float grad_scale);
  void step(const float* grads, float lr, float weight_decay, float grad_scale) {
    step(grads, lr, lr, weight_decay, grad_scale);
  }

  int64_t steps() const { return steps_; }
  void set_steps(int64_t s) { steps_ = s; }
  const std::vector<Piece>& pieces() const { return pieces_; }
  std::size_t local_size() const { return local_total_; }  // elements of each state array
  float* exp_avg() { return m_; }
  float* exp_avg_sq() { return v_; }
  // fp32 master weights: the parameters themselves when the compute dtype is fp32 (then indexed by global
  // offsets, which equal the local ones: fp32 pieces are only ever the whole buffer or DP shards whose
  // masters are the parameters in place).
  float* master() { return master_; }
  bool has_separate_master() const { return owns_master_; }

 private:
  Backend& be_;
  void* params_;
  std::size_t total_;
  std::vector<ParamGroupRange> groups_;
  AdamWHyper hyper_;
  std::vector<Piece> pieces_;
  std::size_t local_total_ = 0;
  float* state_ = nullptr;  // one allocation: m | v | master (when separate)
  float* m_ = nullptr;
  float* v_ = nullptr;
  float* master_ = nullptr;
  bool owns_master_ = false;
  int64_t steps_ = 0;
};

}  // namespace gptrain
