#include "parallel/data_parallel/dp_optimizer.h"

#include "core/common/error.h"

#include <algorithm>
#include <cmath>

namespace gptrain::parallel {

namespace {
std::size_t bucket_elems_of(const DistributedGpt& model) {
  const auto& opt = model.options().ddp_bucket_size;
  return opt ? static_cast<std::size_t>(*opt) : default_bucket_elems(model.grid().dp_size());
}
}  // namespace

DataParallelOptimizer::DataParallelOptimizer(DistributedGpt& model, bool distributed)
    : model_(model), distributed_(distributed),
      sync_(model, distributed, bucket_elems_of(model), model.options().overlap_grad_reduce) {
  if (distributed_) gather_ = std::make_unique<ParamGather>(model_, sync_, model_.options().overlap_param_gather);
  Backend& be = model_.backend();
  const int r = model_.grid().dp_rank();
  const bool fp32 = be.compute_dtype() == DType::F32;
  const std::size_t es = dtype_size(be.compute_dtype());
  for (int c = 0; c < model_.num_chunks(); ++c) {
    ChunkState s;
    s.total = model_.chunk(c).layout().total;
    if (distributed_) {
      // Rank r holds the r-th shard of every bucket (the last ranks' shards may be short or empty).
      for (const GradBucket& b : sync_.buckets(c)) {
        Piece p;
        p.lo = std::min(b.hi, b.lo + std::size_t(r) * b.shard);
        p.hi = std::min(b.hi, p.lo + b.shard);
        p.local = b.shard_offset;
        if (p.hi > p.lo) s.pieces.push_back(p);
      }
      s.local_total = sync_.shard_elems(c);
    } else {
      s.pieces.push_back(Piece{0, s.total, 0});
      s.local_total = s.total;
    }
    const std::size_t n = std::max<std::size_t>(s.local_total, 1);
    s.m = static_cast<float*>(be.alloc(n * 4));
    s.v = static_cast<float*>(be.alloc(n * 4));
    be.fill_zero(s.m, n * 4);
    be.fill_zero(s.v, n * 4);
    if (!fp32) {
      // Master weights start as the fp32 values of the initialised parameters.
      s.master = static_cast<float*>(be.alloc(n * 4));
      be.fill_zero(s.master, n * 4);
      for (const Piece& p : s.pieces)
        be.convert(s.master + p.local, DType::F32, static_cast<char*>(model_.chunk(c).params()) + p.lo * es,
                   be.compute_dtype(), p.hi - p.lo);
    }
    st_.push_back(s);
  }
}

DataParallelOptimizer::~DataParallelOptimizer() {
  Backend& be = model_.backend();
  for (auto& s : st_) {
    for (void* p : {static_cast<void*>(s.m), static_cast<void*>(s.v), static_cast<void*>(s.master)})
      if (p != nullptr) be.release(p);
  }
}

void DataParallelOptimizer::reduce_gradients() { sync_.finish(); }

const float* DataParallelOptimizer::grads_of(int c) {
  return distributed_ ? sync_.shard_grads(c) : model_.chunk(c).grads();
}

double DataParallelOptimizer::grad_norm() { return std::sqrt(grad_sum_squares()); }

double DataParallelOptimizer::grad_sum_squares() {
  Backend& be = model_.backend();
  double sq = 0.0;
  for (int c = 0; c < model_.num_chunks(); ++c) {
    const float* g = grads_of(c);
    for (const Piece& p : st_[c].pieces)
      for (const ParamTensor& t : model_.chunk(c).layout().tensors) {
        if (!model_.counts_in_norm(t)) continue;
        const std::size_t a = std::max(p.lo, t.offset), b = std::min(p.hi, t.offset + t.numel);
        if (a < b) sq += be.sum_squares(g + p.local + (a - p.lo), b - a);
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
  finish_param_gather();  // the previous step's, if a forward did not complete them all
  Backend& be = model_.backend();
  ++steps_;
  const int step = static_cast<int>(steps_);
  const bool fp32 = be.compute_dtype() == DType::F32;
  const std::size_t es = dtype_size(be.compute_dtype());
  for (int c = 0; c < model_.num_chunks(); ++c) {
    ChunkState& s = st_[c];
    GptStage& stage = model_.chunk(c);
    const float* g = grads_of(c);
    const std::size_t nd = stage.layout().num_decay;
    for (const Piece& p : s.pieces) {
      // Up to two launches per piece: its weight-decayed part, then the rest.
      const std::size_t cut = std::clamp(nd, p.lo, p.hi);
      for (int part = 0; part < 2; ++part) {
        const std::size_t a = part == 0 ? p.lo : cut, b = part == 0 ? cut : p.hi;
        if (a >= b) continue;
        const float wd = part == 0 ? weight_decay : 0.0f;
        const std::size_t l = p.local + (a - p.lo);
        char* param = static_cast<char*>(stage.params()) + a * es;
        float* master = fp32 ? reinterpret_cast<float*>(param) : s.master + l;
        be.adamw_update(master, fp32 ? nullptr : param, g + l, s.m + l, s.v + l, b - a, lr, cfg.beta1, cfg.beta2,
                        cfg.eps, wd, step, grad_scale);
      }
    }
  }
  // Every rank's updated shards to every rank (in flight into the next forward with
  // --overlap-param-gather).
  if (gather_) gather_->start();
}

void DataParallelOptimizer::finish_param_gather() {
  if (gather_) gather_->finish();
}

int DataParallelOptimizer::param_gathers_in_last_forward() const {
  return gather_ ? gather_->completed_in_last_forward() : 0;
}

std::vector<float> DataParallelOptimizer::gather_moments(int c, int which) {
  Backend& be = model_.backend();
  const ChunkState& s = st_[c];
  const float* src = which == 0 ? s.m : which == 1 ? s.v : s.master;
  check(src != nullptr, "optimizer state {} does not exist (fp32 compute keeps no master copy)", which);
  std::vector<float> full(s.total);
  if (!distributed_ || model_.grid().dp_size() == 1) {
    for (const Piece& p : s.pieces)
      if (p.hi > p.lo) be.copy_to_host(full.data() + p.lo, src + p.local, (p.hi - p.lo) * 4);
    return full;
  }
  // Every rank's whole state array (padded shards) to every rank, then each bucket's shards back
  // into place. The communicator takes backend memory: gather through a device buffer.
  const int dp = model_.grid().dp_size(), r = model_.grid().dp_rank();
  const std::size_t n = s.local_total;
  float* dev = static_cast<float*>(be.alloc(std::max<std::size_t>(n * dp, 1) * 4));
  be.fill_zero(dev, n * dp * 4);
  for (const Piece& p : s.pieces) be.copy(dev + r * n + p.local, src + p.local, (p.hi - p.lo) * 4);
  model_.comms().dp->all_gather(dev, dev + r * n, n, ElemType::F32);
  std::vector<float> all(n * dp);
  if (!all.empty()) be.copy_to_host(all.data(), dev, all.size() * 4);
  be.release(dev);
  for (const GradBucket& b : sync_.buckets(c))
    for (int q = 0; q < dp; ++q) {
      const std::size_t lo = std::min(b.hi, b.lo + std::size_t(q) * b.shard), hi = std::min(b.hi, lo + b.shard);
      std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(q * n + b.shard_offset), hi - lo,
                  full.begin() + static_cast<std::ptrdiff_t>(lo));
    }
  return full;
}

void DataParallelOptimizer::scatter_moments(int c, int which, const std::vector<float>& full) {
  const ChunkState& s = st_[c];
  check(full.size() == s.total, "optimizer state of chunk {}: {} values, expected {}", c, full.size(), s.total);
  float* dst = which == 0 ? s.m : which == 1 ? s.v : s.master;
  check(dst != nullptr, "optimizer state {} does not exist (fp32 compute keeps no master copy)", which);
  for (const Piece& p : s.pieces)
    if (p.hi > p.lo) model_.backend().copy_to_device(dst + p.local, full.data() + p.lo, (p.hi - p.lo) * 4);
}

}  // namespace gptrain::parallel
