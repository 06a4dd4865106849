#include "parallel/data_parallel/muon_optimizer.h"

#include "core/common/error.h"
#include "core/common/profile_range.h"
#include "core/optim/param_groups.h"
#include "kernels/common/dtype_math.h"

#include <algorithm>
#include <cmath>

namespace gptrain::parallel {

float muon_scale_factor(int out, int in, const std::string& mode) {
  const double o = out, i = in;
  if (mode == "spectral") return static_cast<float>(std::sqrt(std::max(o, i)));
  if (mode == "unit_rms_norm") return static_cast<float>(std::sqrt(o / i));
  if (mode == "shape_scaling") return static_cast<float>(std::sqrt(std::max(1.0, o / i)));
  fail("--muon-scale-mode {}: expected spectral, unit_rms_norm or shape_scaling", mode);
}

std::vector<int> layer_wise_owners(const ParamLayout& layout, int dp_size) {
  check(dp_size >= 1, "layer-wise owners over {} ranks", dp_size);
  std::vector<std::size_t> load(std::size_t(dp_size), 0);
  std::vector<int> owner;
  owner.reserve(layout.tensors.size());
  for (const ParamTensor& t : layout.tensors) {
    if (t.numel == 0) {
      owner.push_back(-1);
      continue;
    }
    const auto least = std::min_element(load.begin(), load.end());
    *least += t.numel;
    owner.push_back(static_cast<int>(least - load.begin()));
  }
  return owner;
}

MuonOptimizer::MuonOptimizer(Backend& be, Communicator& tp, void* params, const ParamLayout& layout,
                             const ModelConfig& config, MuonHyper hyper, const std::vector<bool>& owned)
    : be_(be), tp_(tp), params_(params), hyper_(std::move(hyper)) {
  const int t = tp_.size();
  check(owned.empty() || owned.size() == layout.tensors.size(), "Muon: {} ownership flags for {} tensors", owned.size(),
        layout.tensors.size());
  for (std::size_t ti = 0; ti < layout.tensors.size(); ++ti) {
    const ParamTensor& pt = layout.tensors[ti];
    if (!uses_muon(pt) || pt.numel == 0 || (!owned.empty() && !owned[ti])) continue;
    check(!pt.expert, "--optimizer muon: routed-expert weights ({}) are not supported", pt.name);
    Matrix m;
    m.offset = pt.offset;
    m.numel = pt.numel;
    m.state = elements_;
    m.rows = static_cast<int>(pt.local_shape[0]);
    m.cols = static_cast<int>(pt.local_shape[1]);
    m.partition_dim = pt.sharded() ? pt.blocks.front().dim : -1;
    m.decay = pt.decay;
    if (hyper_.split_qkv && pt.name.ends_with("self_attention.linear_qkv.weight")) {
      // Local rows [Q | K | V] of this rank's heads and groups (docs/checkpoint-format.md).
      const int d = config.kv_channels;
      const int q = config.num_attention_heads * d / t, kv = config.num_query_groups * d / t;
      check(q + 2 * kv == m.rows, "--optimizer muon: {} has {} local rows, expected {} + 2 x {}", pt.name, m.rows, q,
            kv);
      m.parts = {{0, q}, {std::size_t(q), kv}, {std::size_t(q + kv), kv}};
    } else {
      m.parts = {{0, m.rows}};
    }
    elements_ += m.numel;
    largest_ = std::max(largest_, m.numel);
    mats_.push_back(std::move(m));
  }
  owns_master_ = be_.compute_dtype() != DType::F32;
  const std::size_t arrays = owns_master_ ? 2 : 1;
  state_ = static_cast<float*>(be_.alloc(std::max<std::size_t>(elements_ * arrays, 1) * sizeof(float)));
  be_.fill_zero(state_, elements_ * arrays * sizeof(float));
  buf_ = state_;
  master_ = owns_master_ ? state_ + elements_ : nullptr;
  // u (largest matrix), the gathered whole (t x largest) and the gather's blocks (t x largest).
  scratch_ = static_cast<float*>(be_.alloc(std::max<std::size_t>(largest_ * (1 + 2 * std::size_t(t)), 1) * 4));
  if (owns_master_)
    for (const Matrix& m : mats_)
      be_.convert(master_ + m.state, DType::F32,
                  static_cast<const char*>(params_) + m.offset * dtype_size(be_.compute_dtype()), be_.compute_dtype(),
                  m.numel);
}

MuonOptimizer::~MuonOptimizer() {
  be_.release(scratch_);
  be_.release(state_);
}

void MuonOptimizer::update_part(const Matrix& m, const Part& part, float* u, float lr, float weight_decay) {
  const int t = tp_.size(), r = tp_.rank();
  const int rows = part.rows, cols = m.cols;
  const std::size_t n = std::size_t(rows) * std::size_t(cols);
  float* local = u + part.row0 * std::size_t(cols);
  const bool gather = t > 1 && m.partition_dim >= 0 && hyper_.tp_mode != "blockwise";
  float* whole = local;
  int R = rows, C = cols;
  float* full = scratch_ + largest_;
  float* blocks = full + largest_ * std::size_t(t);
  if (gather) {
    // Every rank's shard, rank after rank, then laid out as the whole matrix: stacked rows for a dim-0
    // split, side-by-side columns for a dim-1 split.
    tp_.all_gather(m.partition_dim == 0 ? full : blocks, local, n, ElemType::F32);
    if (m.partition_dim == 1) {
      for (int q = 0; q < t; ++q)
        be_.copy_2d_f32(full + std::size_t(q) * cols, cols * t, blocks + std::size_t(q) * n, cols, rows, cols);
      C = cols * t;
    } else {
      R = rows * t;
    }
    whole = full;
  }
  newton_schulz(be_, whole, R, C, hyper_.ns);
  const float* o = local;
  if (gather) {
    // This rank's shard of the orthogonalized whole, contiguous again.
    if (m.partition_dim == 1)
      be_.copy_2d_f32(local, cols, full + std::size_t(r) * cols, C, rows, cols);
    else
      be_.copy(local, full + std::size_t(r) * n, n * sizeof(float));
  }
  const float scale = muon_scale_factor(R, C, hyper_.scale_mode);
  const std::size_t at = m.offset + part.row0 * std::size_t(cols);
  const std::size_t st = m.state + part.row0 * std::size_t(cols);
  float* master = owns_master_ ? master_ + st : static_cast<float*>(params_) + at;
  void* param = owns_master_ ? static_cast<char*>(params_) + at * dtype_size(be_.compute_dtype()) : nullptr;
  be_.muon_apply(master, param, o, n, lr, m.decay ? weight_decay : 0.0f, scale, hyper_.extra_scale);
}

void MuonOptimizer::step(const float* grads, float lr, float weight_decay, float grad_scale) {
  ProfileRange range("optimizer-muon");
  float* u = scratch_;
  for (const Matrix& m : mats_) {
    be_.muon_momentum(buf_ + m.state, u, grads + m.offset, m.numel, grad_scale, hyper_.momentum, hyper_.nesterov);
    for (const Part& p : m.parts) update_part(m, p, u, lr, weight_decay);
  }
}

void MuonOptimizer::state_to_host(int which, float* full) const {
  if (which == 1) return;
  check(which == 0 || owns_master_, "Muon state {}: fp32 compute keeps no separate master copy", which);
  const float* src = which == 0 ? buf_ : master_;
  for (const Matrix& m : mats_) be_.copy_to_host(full + m.offset, src + m.state, m.numel * sizeof(float));
}

void MuonOptimizer::state_from_host(int which, const float* full) {
  if (which == 1) return;
  check(which == 0 || owns_master_, "Muon state {}: fp32 compute keeps no separate master copy", which);
  float* dst = which == 0 ? buf_ : master_;
  for (const Matrix& m : mats_) be_.copy_to_device(dst + m.state, full + m.offset, m.numel * sizeof(float));
}

}  // namespace gptrain::parallel
