// AdamW over a model's flat parameter buffer, or over pieces of it (the data-parallel shards a
// distributed optimizer owns): one arena for the state (exp_avg and exp_avg_sq, each fp32 or bf16 as
// AdamWHyper says, and the fp32 master weights when the compute dtype is bf16/fp16). State arrays are
// indexed by "local" offsets: piece [lo, hi) of the parameters lives at [local, local + hi - lo) of every
// state array and of the gradients handed to step(). The parameters are cut into group ranges
// (param_groups.h: weight decay on or off, default or --decoupled-lr learning rate); each piece is one
// fused Backend::adamw_update launch per group range it meets (the layout puts all weight-decayed tensors
// first, so without --decoupled-lr at most two: below num_decay with weight decay, the rest, biases and
// norm weights, without).
// Optimizer offloading (--optimizer-cpu-offload): the first host_fraction of the updated elements (in local
// order, cut at an element) keep their moments and an fp32 master in host memory; each step copies their
// gradients to the host, runs the CPU AdamW twin there and writes the parameters back, in the compute
// dtype. Device state holds only the rest.
// The same ranges, groups, offloading and checkpointed state serve --optimizer sgd (torch.optim.SGD with
// momentum, Megatron's sgd): its state is one momentum buffer (array 0) instead of Adam's two moments; and
// --optimizer lion: the group ranges marked matrix (param_groups.h) are stepped by Lion with exp_avg (array 0)
// as its one state array (their exp_avg_sq elements are allocated but unused), the others by AdamW.
#pragma once

#include "core/optim/param_groups.h"
#include "core/optim/stochastic_rounding.h"
#include "kernels/backend.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gptrain {

// The element-wise update rule (--optimizer adam | sgd | lion). lion: Lion on the matrix group ranges,
// AdamW on the rest (Megatron's emerging-optimizer Lion takes the 2-D weights, its scalar Adam the rest).
enum class UpdateRule { adamw, sgd, lion };

struct AdamWHyper {
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
  // Storage dtypes of the moments (--exp-avg-dtype, --exp-avg-sq-dtype): F32 or BF16, the step's maths
  // fp32 either way (kernels/adamw/adamw_math.h).
  DType exp_avg_dtype = DType::F32, exp_avg_sq_dtype = DType::F32;
  UpdateRule rule = UpdateRule::adamw;
  float sgd_momentum = 0.9f;  // --sgd-momentum
  // Lion's betas; Megatron's --optimizer lion passes --adam-beta1/2 to it (not --lion-beta1/2).
  float lion_beta1 = 0.9f, lion_beta2 = 0.999f;
  // --bf16-stochastic-rounding: no master copy; the parameters hold bf16 values (bf16, or fp32 on an fp32
  // backend) and each step's result is rounded to bf16 stochastically, the bits keyed by this seed.
  bool stochastic_rounding = false;
  uint64_t rounding_seed = 0;
};

// The state arrays a rule keeps per updated element besides the master, and their checkpoint names
// (torch's state keys): adam "exp_avg", "exp_avg_sq"; sgd "momentum_buffer"; lion's Adam part as adam (its
// matrices keep "exp_avg" only: DataParallelOptimizer::state_names).
std::vector<std::string> optimizer_state_names(UpdateRule rule);

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
  // groups: [0, total) cut into group ranges (param_group_ranges). Only `pieces` (sorted by local offset)
  // are updated (possibly none); local_total: elements of each state array; host_fraction: the share of
  // the updated elements whose state lives on the host (0..1).
  AdamW(Backend& be, void* params, std::size_t total, std::vector<ParamGroupRange> groups, AdamWHyper hyper,
        std::vector<Piece> pieces, std::size_t local_total, double host_fraction = 0.0);
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
  std::size_t host_elements() const { return cut_; }       // local [0, cut) lives on the host
  // State array `which` (0 = exp_avg or SGD's momentum buffer, 1 = exp_avg_sq (Adam only), 2 = fp32 master,
  // non-fp32 compute only) over the pieces, to / from host memory indexed by local offsets (local_size()
  // elements; gaps untouched), as fp32: bf16-stored moments widen exactly, and fp32 values are rounded to
  // nearest even on the way in.
  void state_to_host(int which, float* out);
  void state_from_host(int which, const float* in);
  // After the parameters were set from outside (a checkpoint load): fp32 compute has no separate device
  // master (the parameters are the masters), so the host masters are read again from them.
  void params_changed();
  bool has_separate_master() const { return owns_master_; }
  UpdateRule rule() const { return hyper_.rule; }
  // The gradients handed to step() are indexed by the parameters' (global) offsets instead of the local ones:
  // compact state over some tensors of a whole gradient buffer (--optimizer muon's Adam part).
  void set_grads_at_global_offsets(bool on) { grads_global_ = on; }
  const AdamWHyper& hyper() const { return hyper_; }
  // With stochastic rounding: where each flat element draws its bits (stochastic_rounding_runs of the
  // layout; by default the whole buffer is one tensor of key 0).
  void set_rounding_runs(std::vector<RoundingRun> runs) { runs_ = std::move(runs); }

 private:
  Backend& be_;
  void* params_;
  std::size_t total_;
  std::vector<ParamGroupRange> groups_;
  AdamWHyper hyper_;
  std::vector<Piece> pieces_;
  std::size_t local_total_ = 0;
  std::size_t cut_ = 0;  // local [0, cut_) on the host, [cut_, local_total_) on the device
  // Device, one allocation: master (when separate) | m | v, each in its storage dtype, local - cut_ indexed.
  void* state_ = nullptr;
  void* m_ = nullptr;
  void* v_ = nullptr;
  float* master_ = nullptr;
  bool owns_master_ = false;
  std::vector<unsigned char> host_m_, host_v_;  // cut_ elements each, in the moments' storage dtypes
  std::vector<float> host_master_, host_grad_;  // cut_ each

  // f(global offset, local offset, count, on host) over the pieces (cut at the group bounds with
  // by_group) and at the host cut.
  void for_each_range(const std::function<void(std::size_t, std::size_t, std::size_t, bool)>& f,
                      bool by_group = false) const;
  const ParamGroupRange& group_of(std::size_t global) const;
  void params_to_host_master(std::size_t global, std::size_t local, std::size_t n);
  void host_master_to_params(std::size_t global, std::size_t local, std::size_t n);
  DType state_dtype(int which) const;
  void* device_state(int which, std::size_t local) const;  // `which` at local offset (>= cut_)
  void* host_state(int which, std::size_t local);          // `which` at local offset (< cut_)
  int64_t steps_ = 0;
  bool grads_global_ = false;
  std::vector<RoundingRun> runs_;
  void round_params_to_bf16();
};

}  // namespace gptrain
