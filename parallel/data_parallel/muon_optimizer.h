// The Muon half of --optimizer muon (Megatron's TensorParallelMuon over its emerging-optimizers
// OrthogonalizedOptimizer), for one model chunk: every 2-D weight except the word embeddings and the output
// layer (core/optim/param_groups.h, uses_muon) keeps an fp32 momentum buffer (and an fp32 master when the
// compute dtype is not fp32); each step per matrix:
//   buf = lerp(buf, g, 1 - momentum);  u = --muon-nesterov ? lerp(g, buf, momentum) : buf
//   p  -= lr * wd * p;  p -= lr * scale * --muon-extra-scale-factor * NewtonSchulz(u)
// (kernels/muon/muon_math.h, core/optim/newton_schulz.h). --muon-split-qkv (the default) orthogonalizes the
// query, key and value rows of linear_qkv as three matrices. Tensor parallelism (--muon-tp-mode): a sharded
// matrix (or QKV part) is gathered over TP and orthogonalized whole (duplicated; distributed, which Megatron
// computes with an all-reduced Gram matrix instead, is the same maths and is computed the same way here), or
// each shard on its own (blockwise). scale (--muon-scale-mode) from the orthogonalized matrix's (out, in):
// spectral sqrt(max(out, in)), unit_rms_norm sqrt(out / in), shape_scaling sqrt(max(1, out / in)).
// The other parameters are stepped by AdamW (DataParallelOptimizer). Without the distributed optimizer every
// DP replica updates everything; with it (Megatron's layer-wise distributed optimizer) each DP rank keeps the
// state of and steps the whole tensors layer_wise_owners gives it, then sends them to the other DP ranks.
#pragma once

#include "core/model/param_layout.h"
#include "core/optim/newton_schulz.h"
#include "kernels/backend.h"
#include "parallel/comm/communicator.h"

#include <cstddef>
#include <string>
#include <vector>

namespace gptrain::parallel {

struct MuonHyper {
  float momentum = 0.9f;  // --muon-momentum
  bool nesterov = false;  // --muon-nesterov
  bool split_qkv = true;  // --muon-no-split-qkv clears it
  std::string scale_mode = "spectral";
  float extra_scale = 1.0f;
  std::string tp_mode = "duplicated";
  NewtonSchulzOptions ns;  // --muon-num-ns-steps, --muon-coefficient-type, --muon-fp32-matmul-prec medium: bf16
};

// The scale of an orthogonalized (out, in) matrix's update under a --muon-scale-mode.
float muon_scale_factor(int out, int in, const std::string& mode);

// --optimizer muon --use-distributed-optimizer: the DP rank that owns each tensor of the layout (-1 for an empty
// one): in layout order, each to the rank with the fewest elements so far (the lowest on a tie). The same on
// every TP rank (the layouts' tensors are alike), so a TP-gathered matrix is orthogonalized by one DP rank of
// each TP group together.
std::vector<int> layer_wise_owners(const ParamLayout& layout, int dp_size);

class MuonOptimizer {
 public:
  // params: the chunk's flat parameters (compute dtype); tp: the tensor-parallel group; config: the global
  // architecture (QKV rows). The matrices are the layout's uses_muon tensors (those of `owned`, indexed like the
  // layout's tensors, when given).
  MuonOptimizer(Backend& be, Communicator& tp, void* params, const ParamLayout& layout, const ModelConfig& config,
                MuonHyper hyper, const std::vector<bool>& owned = {});
  ~MuonOptimizer();
  MuonOptimizer(const MuonOptimizer&) = delete;
  MuonOptimizer& operator=(const MuonOptimizer&) = delete;

  // grads indexed by the layout's offsets, g = grads * grad_scale.
  void step(const float* grads, float lr, float weight_decay, float grad_scale);
  std::size_t elements() const { return elements_; }
  std::size_t matrices() const { return mats_.size(); }
  // State array which (0 = momentum_buffer, 2 = fp32 master) into / from a host array indexed by the layout's
  // offsets (only the matrices' ranges are touched); which 1 (Adam's exp_avg_sq) is not Muon's: nothing.
  void state_to_host(int which, float* full) const;
  void state_from_host(int which, const float* full);

 private:
  struct Part {
    std::size_t row0 = 0;  // first local row of the part
    int rows = 0;          // local rows
  };
  struct Matrix {
    std::size_t offset = 0, numel = 0, state = 0;  // flat offset, local elements, offset in the state arrays
    int rows = 0, cols = 0;                        // local shape
    int partition_dim = -1;                        // the dim split over TP, -1 when replicated
    bool decay = true;                             // weight decay applies
    std::vector<Part> parts;                       // QKV: query, key, value rows; otherwise the whole
  };
  // Orthogonalizes `rows` x cols_ of local rows (contiguous in u) and applies the update to them.
  void update_part(const Matrix& m, const Part& part, float* u, float lr, float weight_decay);

  Backend& be_;
  Communicator& tp_;
  void* params_;
  MuonHyper hyper_;
  std::vector<Matrix> mats_;
  std::size_t elements_ = 0, largest_ = 0;
  bool owns_master_ = false;
  float* state_ = nullptr;  // momentum | master (when separate), state-offset indexed
  float* buf_ = nullptr;
  float* master_ = nullptr;
  float* scratch_ = nullptr;  // u of the largest matrix, then its gathered whole and the gather's blocks
};

}  // namespace gptrain::parallel
