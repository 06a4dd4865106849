#include "parallel/dp_optimizer.h"

#include "core/common/error.h"

#include <algorithm>
#include <cmath>

namespace gptrain::parallel {

DataParallelOptimizer::DataParallelOptimizer(DistributedGpt& model, bool distributed, std::size_t bucket_elems)
    : model_(model), distributed_(distributed), bucket_(std::max<std::size_t>(bucket_elems, 1)) {
  Backend& be = model_.backend();
  const int dp = model_.grid().dp_size(), r = model_.grid().dp_rank();
  const bool fp32 = be.compute_dtype() == DType::F32;
  const std::size_t es = dtype_size(be.compute_dtype());
  for (int c = 0; c < model_.num_chunks(); ++c) {
    ChunkState s;
    s.total = model_.chunk(c).layout().total;
    if (distributed_) {
      s.shard = (s.total + dp - 1) / dp;
      s.lo = std::min(s.total, r * s.shard);
      s.hi = std::min(s.total, s.lo + s.shard);
      s.grad_shard = static_cast<float*>(be.alloc(std::max<std::size_t>(s.shard, 1) * 4));
      s.grad_pad = static_cast<float*>(be.alloc(std::max<std::size_t>(s.shard * dp, 1) * 4));
      s.param_pad = be.alloc(std::max<std::size_t>(s.shard * dp, 1) * es);
      be.fill_zero(s.grad_pad, s.shard * dp * 4);
    } else {
      s.shard = s.total;
      s.lo = 0;
      s.hi = s.total;
    }
    const std::size_t n = std::max<std::size_t>(s.hi - s.lo, 1);
    s.m = static_cast<float*>(be.alloc(n * 4));
    s.v = static_cast<float*>(be.alloc(n * 4));
    be.fill_zero(s.m, n * 4);
    be.fill_zero(s.v, n * 4);
    if (!fp32) {
      // Master weights start as the fp32 values of the initialised parameters.
      s.master = static_cast<float*>(be.alloc(n * 4));
      be.convert(s.master, DType::F32, static_cast<char*>(model_.chunk(c).params()) + s.lo * es,
                 be.compute_dtype(), s.hi - s.lo);
    }
    st_.push_back(s);
  }
}

DataParallelOptimizer::~DataParallelOptimizer() {
  Backend& be = model_.backend();
  for (auto& s : st_) {
    for (void* p : {static_cast<void*>(s.m), static_cast<void*>(s.v), static_cast<void*>(s.master),
                    static_cast<void*>(s.grad_shard), static_cast<void*>(s.grad_pad), s.param_pad})
      if (p != nullptr) be.release(p);
  }
}

void DataParallelOptimizer::reduce_gradients() {
  const int dp = model_.grid().dp_size();
  Backend& be = model_.backend();
  for (int c = 0; c < model_.num_chunks(); ++c) {
    ChunkState& s = st_[c];
    float* g = model_.chunk(c).grads();
    if (distributed_) {
      be.copy(s.grad_pad, g, s.total * 4);  // the padding tail stays zero
      if (dp > 1) be.scale_inplace(s.grad_pad, 1.0f / dp, s.total);
      if (dp > 1) {
        model_.comms().dp->reduce_scatter(s.grad_shard, s.grad_pad, s.shard, ElemType::F32, ReduceOp::Sum);
      } else {
        be.copy(s.grad_shard, s.grad_pad, s.shard * 4);
      }
      continue;
    }
    if (dp == 1) continue;
    be.scale_inplace(g, 1.0f / dp, s.total);  // Megatron averages over DP before the reduction
    for (std::size_t off = 0; off < s.total; off += bucket_)
      model_.comms().dp->all_reduce(g + off, std::min(bucket_, s.total - off), ElemType::F32, ReduceOp::Sum);
  }
}

const float* DataParallelOptimizer::grads_of(int c) {
  return distributed_ ? st_[c].grad_shard : model_.chunk(c).grads();
}

double DataParallelOptimizer::grad_norm() { return std::sqrt(grad_sum_squares()); }

double DataParallelOptimizer::grad_sum_squares() {
  Backend& be = model_.backend();
  double sq = 0.0;
  for (int c = 0; c < model_.num_chunks(); ++c) {
    const ChunkState& s = st_[c];
    const float* g = grads_of(c);  // indexes [lo, hi) from 0
    for (const ParamTensor& t : model_.chunk(c).layout().tensors) {
      if (!model_.counts_in_norm(t)) continue;
      const std::size_t a = std::max(s.lo, t.offset), b = std::min(s.hi, t.offset + t.numel);
      if (a < b) sq += be.sum_squares(g + (a - s.lo), b - a);
    }
  }
  // Sum over every rank that holds distinct elements: the model-parallel group, and DP shards.
  if (distributed_) {
    model_.comms().host_world().all_reduce(&sq, 1, ElemType::F64, ReduceOp::Sum);
  } else if (model_.comms().host_mp().size() > 1) {
    model_.comms().host_mp().all_reduce(&sq, 1, ElemType::F64, ReduceOp::Sum);
  }
  return sq;
}

double DataParallelOptimizer::step(const AdamWConfig& cfg, float lr, int step, float inv_loss_scale) {
  const double norm = grad_norm() * inv_loss_scale;
  if (!std::isfinite(norm)) return norm;  // fp16 overflow: the caller's loss scaler skips this step
  float scale = inv_loss_scale;
  if (cfg.clip_grad > 0.0f) {
    const double coeff = cfg.clip_grad / (norm + 1e-6);
    if (coeff < 1.0) scale = static_cast<float>(coeff * inv_loss_scale);
  }
  steps_ = step - 1;
  apply(lr, cfg.weight_decay, scale, cfg);
  return norm;
}

void DataParallelOptimizer::apply(float lr, float weight_decay, float grad_scale, const AdamWConfig& cfg) {
  Backend& be = model_.backend();
  ++steps_;
  const int step = static_cast<int>(steps_);
  const bool fp32 = be.compute_dtype() == DType::F32;
  const std::size_t es = dtype_size(be.compute_dtype());
  const int dp = model_.grid().dp_size();
  for (int c = 0; c < model_.num_chunks(); ++c) {
    ChunkState& s = st_[c];
    GptStage& stage = model_.chunk(c);
    const float* g = grads_of(c);
    const std::size_t nd = stage.layout().num_decay;
    // Two launches: the weight-decayed prefix of the layout, then the rest.
    const std::size_t cut = std::clamp(nd, s.lo, s.hi);
    for (int part = 0; part < 2; ++part) {
      const std::size_t a = part == 0 ? s.lo : cut, b = part == 0 ? cut : s.hi;
      if (a >= b) continue;
      const float wd = part == 0 ? weight_decay : 0.0f;
      char* param = static_cast<char*>(stage.params()) + a * es;
      float* master = fp32 ? reinterpret_cast<float*>(param) : s.master + (a - s.lo);
      be.adamw_update(master, fp32 ? nullptr : param, g + (a - s.lo), s.m + (a - s.lo), s.v + (a - s.lo), b - a, lr,
                      cfg.beta1, cfg.beta2, cfg.eps, wd, step, grad_scale);
    }
    if (distributed_ && dp > 1) {
      // Every rank's updated shard to every rank.
      char* pad = static_cast<char*>(s.param_pad);
      char* mine = pad + model_.grid().dp_rank() * s.shard * es;
      be.copy(mine, static_cast<char*>(stage.params()) + s.lo * es, (s.hi - s.lo) * es);
      model_.comms().dp->all_gather(pad, mine, s.shard, act_elem_type(be.compute_dtype()));
      be.copy(stage.params(), pad, s.total * es);
    }
  }
}

std::vector<float> DataParallelOptimizer::gather_moments(int c, int which) {
  Backend& be = model_.backend();
  const ChunkState& s = st_[c];
  const float* src = which == 0 ? s.m : which == 1 ? s.v : s.master;
  check(src != nullptr, "optimizer state {} does not exist (fp32 compute keeps no master copy)", which);
  std::vector<float> full(s.total);
  if (!distributed_ || model_.grid().dp_size() == 1) {
    if (s.total > 0) be.copy_to_host(full.data(), src, s.total * 4);
    return full;
  }
  const int dp = model_.grid().dp_size();
  std::vector<float> pad(s.shard * dp, 0.0f), mine(s.shard, 0.0f);
  if (s.hi > s.lo) be.copy_to_host(mine.data(), src, (s.hi - s.lo) * 4);
  // The communicator takes backend memory: gather through a device buffer.
  float* dev = static_cast<float*>(be.alloc(std::max<std::size_t>(s.shard * dp, 1) * 4));
  be.copy_to_device(dev + model_.grid().dp_rank() * s.shard, mine.data(), s.shard * 4);
  model_.comms().dp->all_gather(dev, dev + model_.grid().dp_rank() * s.shard, s.shard, ElemType::F32);
  be.copy_to_host(pad.data(), dev, s.shard * dp * 4);
  be.release(dev);
  std::copy(pad.begin(), pad.begin() + static_cast<std::ptrdiff_t>(s.total), full.begin());
  return full;
}

void DataParallelOptimizer::scatter_moments(int c, int which, const std::vector<float>& full) {
  const ChunkState& s = st_[c];
  check(full.size() == s.total, "optimizer state of chunk {}: {} values, expected {}", c, full.size(), s.total);
  float* dst = which == 0 ? s.m : which == 1 ? s.v : s.master;
  check(dst != nullptr, "optimizer state {} does not exist (fp32 compute keeps no master copy)", which);
  if (s.hi > s.lo) model_.backend().copy_to_device(dst, full.data() + s.lo, (s.hi - s.lo) * 4);
}

}  // namespace gptrain::parallel
