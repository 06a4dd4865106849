#include "parallel/data_parallel/dp_optimizer.h"

#include "core/common/error.h"
#include "parallel/tensor/tp_hooks.h"
#include "kernels/common/dtype_math.h"

#include <fmt/format.h>

#include <algorithm>

namespace gptrain::parallel {

namespace {
std::size_t bucket_elems_of(const DistributedGpt& model) {
  const auto& opt = model.options().ddp_bucket_size;
  return opt ? static_cast<std::size_t>(*opt) : default_bucket_elems(model.grid().dp_cp_size());
}
// --exp-avg-dtype / --exp-avg-sq-dtype (validate_parallel_args allows fp32 and bf16).
DType moment_dtype(const std::string& flag_value) { return flag_value == "bf16" ? DType::BF16 : DType::F32; }
}  // namespace

DataParallelOptimizer::DataParallelOptimizer(DistributedGpt& model, AdamWHyper hyper, MuonHyper muon)
    : model_(model),
      // Muon needs whole matrices: its distributed optimizer is layer-wise (the gradients all-reduced, each
      // tensor stepped by one DP rank and sent to the others) instead of sharding every bucket.
      layer_wise_(model.options().use_distributed_optimizer && model.options().optimizer == "muon"),
      distributed_(model.options().use_distributed_optimizer && !layer_wise_),
      sync_(model, distributed_, bucket_elems_of(model), model.options().overlap_grad_reduce,
            model.options().grad_reduce_in_bf16) {
  if (distributed_) gather_ = std::make_unique<ParamGather>(model_, sync_, model_.options().overlap_param_gather);
  Backend& be = model_.backend();
  hyper.exp_avg_dtype = moment_dtype(model_.options().exp_avg_dtype);
  hyper.exp_avg_sq_dtype = moment_dtype(model_.options().exp_avg_sq_dtype);
  hyper.stochastic_rounding = model_.options().bf16_stochastic_rounding;
  // Shard positions inside the rank's distributed-optimizer instance (the whole DP group without hybrid sharding).
  const int r = model_.grid().intra_dp_rank(), er = model_.grid().intra_expert_dp_rank();
  const double host = optimizer_host_fraction(model_.options());
  for (int c = 0; c < model_.num_chunks(); ++c) {
    GptStage& st = model_.chunk(c);
    const ParamLayout& layout = st.layout();
    std::vector<ParamGroupRange> groups = param_group_ranges(layout, hyper.rule == UpdateRule::lion);
    if (model_.options().optimizer == "muon") {
      check(!distributed_ && host == 0.0, "--optimizer muon: --optimizer-cpu-offload is not supported");
      check(!hyper.stochastic_rounding, "--bf16-stochastic-rounding: only with --optimizer adam");
      // Layer-wise: this DP rank's tensors only.
      std::vector<bool> owned;
      if (layer_wise_) {
        owners_.push_back(layer_wise_owners(layout, model_.grid().dp_size()));
        for (const int o : owners_.back()) owned.push_back(o == r);
      }
      muon_.push_back(
          std::make_unique<MuonOptimizer>(be, *model_.comms().tp, st.params(), layout, st.config(), muon, owned));
      // AdamW over the other tensors, its state compact, the gradients read at the parameters' offsets.
      std::vector<AdamW::Piece> pieces;
      std::size_t local = 0;
      for (std::size_t ti = 0; ti < layout.tensors.size(); ++ti) {
        const ParamTensor& t = layout.tensors[ti];
        if (uses_muon(t) || t.numel == 0 || (!owned.empty() && !owned[ti])) continue;
        if (!pieces.empty() && pieces.back().hi == t.offset) {
          pieces.back().hi += t.numel;
        } else {
          pieces.push_back({t.offset, t.offset + t.numel, local});
        }
        local += t.numel;
      }
      std::sort(pieces.begin(), pieces.end(), [](const auto& x, const auto& y) { return x.local < y.local; });
      adam_.push_back(
          std::make_unique<AdamW>(be, st.params(), layout.total, std::move(groups), hyper, std::move(pieces), local));
      adam_.back()->set_grads_at_global_offsets(true);
      continue;
    }
    if (!distributed_) {
      adam_.push_back(std::make_unique<AdamW>(be, st.params(), layout.total, std::move(groups), hyper,
                                              std::vector<AdamW::Piece>{{0, layout.total, 0}}, layout.total, host));
      if (hyper.stochastic_rounding) adam_.back()->set_rounding_runs(stochastic_rounding_runs(layout));
      continue;
    }
    // Rank r holds the r-th shard of every bucket (the last ranks' shards may be short or empty; r is the
    // rank in the expert-data-parallel group for an expert bucket); a shard may span several parameter
    // groups (AdamW cuts it at their bounds).
    std::vector<AdamW::Piece> pieces;
    for (const GradBucket& b : sync_.buckets(c)) {
      AdamW::Piece p;
      p.lo = std::min(b.hi, b.lo + std::size_t(b.expert ? er : r) * b.shard);
      p.hi = std::min(b.hi, p.lo + b.shard);
      p.local = b.shard_offset;
      if (p.hi > p.lo) pieces.push_back(p);
    }
    adam_.push_back(std::make_unique<AdamW>(be, st.params(), layout.total, std::move(groups), hyper, std::move(pieces),
                                            sync_.shard_elems(c), host));
    if (hyper.stochastic_rounding) adam_.back()->set_rounding_runs(stochastic_rounding_runs(layout));
  }
}

DataParallelOptimizer::~DataParallelOptimizer() = default;

void DataParallelOptimizer::reduce_gradients() { sync_.finish(); }

std::size_t DataParallelOptimizer::lion_elements() const {
  std::size_t n = 0;
  for (int c = 0; c < model_.num_chunks(); ++c)
    for (const ParamTensor& t : model_.chunk(c).layout().tensors)
      if (uses_muon(t)) n += t.numel;
  return n;
}

std::string DataParallelOptimizer::describe() const {
  std::size_t params = 0, decayed = 0, buckets = 0;
  for (int c = 0; c < model_.num_chunks(); ++c) {
    params += model_.chunk(c).layout().total;
    decayed += model_.chunk(c).layout().num_decay;
    buckets += sync_.buckets(c).size();
  }
  const AdamW& first = *adam_.front();
  std::size_t muon_elems = 0, matrices = 0;  // the model's (each layer-wise DP rank steps some of them)
  if (!muon_.empty())
    for (int c = 0; c < model_.num_chunks(); ++c)
      for (const ParamTensor& t : model_.chunk(c).layout().tensors)
        if (uses_muon(t) && t.numel > 0) muon_elems += t.numel, ++matrices;
  std::string s =
      !muon_.empty() ? fmt::format("Muon over {} matrices ({} parameters), AdamW over the other {} parameters",
                                   matrices, muon_elems, params - muon_elems)
      : first.rule() == UpdateRule::sgd ? fmt::format("SGD (momentum {:g}) over {} parameters ({} with weight decay)",
                                                      first.hyper().sgd_momentum, params, decayed)
      : first.rule() == UpdateRule::lion
          ? fmt::format("Lion (betas {:g}, {:g}) over {} matrix parameters, AdamW over the other {}",
                        first.hyper().lion_beta1, first.hyper().lion_beta2, lion_elements(), params - lion_elements())
          : fmt::format("AdamW over {} parameters ({} with weight decay)", params, decayed);
  if (model_.options().optimizer_cpu_offload) {
    std::size_t host = 0, state = 0;
    for (const auto& a : adam_) {
      host += a->host_elements();
      state += a->local_size();
    }
    s += fmt::format(", {} of this rank's {} optimizer elements on the host (--optimizer-cpu-offload)", host, state);
  }
  if (first.hyper().stochastic_rounding)
    s += ", bf16 parameters without fp32 master weights, updates rounded stochastically (--bf16-stochastic-rounding)";
  if (model_.options().use_precision_aware_optimizer)
    s += fmt::format(", moments stored as exp_avg {} / exp_avg_sq {} (--use-precision-aware-optimizer)",
                     model_.options().exp_avg_dtype, model_.options().exp_avg_sq_dtype);
  const int dp = model_.grid().dp_cp_size();
  const bool bf16 = model_.options().grad_reduce_in_bf16;
  if (dp == 1)
    return s + "; data parallel 1: no gradient reduction" +
           (bf16 ? " (--grad-reduce-in-bf16 has nothing to reduce: no effect)" : "");
  s += fmt::format("; data parallel {}: {} gradient buckets, reduced {}{}", dp, buckets,
                   model_.options().overlap_grad_reduce ? "during backward (--overlap-grad-reduce)" : "after backward",
                   bf16 ? " in bf16 (--grad-reduce-in-bf16)" : "");
  if (distributed_ && model_.grid().dist_opt_instances() > 1)
    s += fmt::format(
        "; optimizer state sharded over DP {} inside each of {} instances, shards all-reduced across them "
        "(--num-distributed-optimizer-instances)",
        model_.grid().intra_dp_size(), model_.grid().dist_opt_instances());
  else if (distributed_)
    s += "; optimizer state sharded over DP (--use-distributed-optimizer)";
  if (distributed_ && model_.options().overlap_param_gather) s += ", parameter gathers overlap the next forward";
  if (layer_wise_)
    s += "; optimizer state layer-wise over DP (--use-distributed-optimizer: each DP rank steps whole tensors and "
         "broadcasts them)";
  return s;
}

const float* DataParallelOptimizer::grads_of(int c) {
  return distributed_ ? sync_.shard_grads(c) : model_.chunk(c).grads();
}

void DataParallelOptimizer::for_each_counted_run(const CountedRun& f) {
  for (int c = 0; c < model_.num_chunks(); ++c) {
    const std::vector<ParamTensor>& tensors = model_.chunk(c).layout().tensors;
    const std::vector<bool> expert = model_.expert_tensors(c);
    // Muon's AdamW holds only the non-matrix tensors: the runs then walk the whole chunk, at its offsets.
    const std::vector<AdamW::Piece> whole{{0, model_.chunk(c).layout().total, 0}};
    for (const AdamW::Piece& p : muon_.empty() ? adam_[c]->pieces() : whole) {
      // Adjacent counted tensors are one run: a whole chunk that counts is one call.
      std::size_t run_lo = 0, run_hi = 0;
      int run_kind = 0;
      auto flush = [&] {
        if (run_hi > run_lo) f(c, run_lo, p.local + (run_lo - p.lo), run_hi - run_lo, run_kind);
        run_lo = run_hi = 0;
      };
      for (std::size_t ti = 0; ti < tensors.size(); ++ti) {
        const ParamTensor& t = tensors[ti];
        const std::size_t a = std::max(p.lo, t.offset), b = std::min(p.hi, t.offset + t.numel);
        if (a >= b) continue;
        const int kind = expert[ti] ? 1 : 0;
        if (!model_.counts_in_norm(t) || kind != run_kind) {
          flush();
          run_kind = kind;
          if (!model_.counts_in_norm(t)) continue;
        }
        if (run_hi == a && run_hi > run_lo) {
          run_hi = b;
        } else {
          flush();
          run_lo = a;
          run_hi = b;
        }
      }
      flush();
    }
  }
}

double DataParallelOptimizer::sum_over_holders(double per_kind[2]) {
  // Sum over every rank that holds distinct elements: the model-parallel group, and DP shards. Routed
  // experts differ across EP ranks too: their sum also runs over EP (the ETP x EP x PP group), as Megatron.
  if (distributed_) {
    // Hybrid sharding: the instances hold the same shards; the first one's count.
    if (model_.grid().dist_opt_instance() != 0) per_kind[0] = per_kind[1] = 0.0;
    model_.comms().host_world().all_reduce(per_kind, 2, ElemType::F64, ReduceOp::Sum);
  } else {
    if (model_.comms().host_mp().size() > 1)
      model_.comms().host_mp().all_reduce(&per_kind[0], 1, ElemType::F64, ReduceOp::Sum);
    if (model_.comms().host_expert_mp().size() > 1)
      model_.comms().host_expert_mp().all_reduce(&per_kind[1], 1, ElemType::F64, ReduceOp::Sum);
  }
  return per_kind[0] + per_kind[1];
}

double DataParallelOptimizer::grad_sum_squares() {
  Backend& be = model_.backend();
  double sq[2] = {0.0, 0.0};  // dense, routed experts
  for_each_counted_run([&](int c, std::size_t, std::size_t local, std::size_t n, int kind) {
    sq[kind] += be.sum_squares(grads_of(c) + local, n);
  });
  return sum_over_holders(sq);
}

double DataParallelOptimizer::params_sum_squares() {
  Backend& be = model_.backend();
  // Megatron's params norm reads the fp32 main parameters where the model's are not fp32: here AdamW's
  // masters (this rank's pieces, through the host); fp32 parameters are their own masters. Under Muon the
  // runs are at the chunk's offsets: AdamW's and Muon's masters are put together at those.
  std::vector<std::vector<float>> masters(adam_.size());
  for (std::size_t c = 0; c < adam_.size(); ++c) {
    if (!adam_[c]->has_separate_master()) {
      // Stochastic rounding under --bf16: the bf16 parameters are the masters, widened here.
      if (be.compute_dtype() == DType::F32) continue;
      const std::size_t total = model_.chunk(int(c)).layout().total;
      std::vector<uint16_t> h(total);
      be.copy_to_host(h.data(), model_.chunk(int(c)).params(), total * 2);
      std::vector<float> full(total);
      for (std::size_t i = 0; i < total; ++i) full[i] = bf16_to_f32(h[i]);
      masters[c].assign(adam_[c]->local_size(), 0.0f);
      for (const AdamW::Piece& p : adam_[c]->pieces())
        std::copy_n(full.begin() + std::ptrdiff_t(p.lo), p.hi - p.lo, masters[c].begin() + std::ptrdiff_t(p.local));
      continue;
    }
    masters[c].assign(adam_[c]->local_size(), 0.0f);
    adam_[c]->state_to_host(2, masters[c].data());
    if (muon_.empty()) continue;
    std::vector<float> full(model_.chunk(int(c)).layout().total, 0.0f);
    for (const AdamW::Piece& p : adam_[c]->pieces())
      std::copy_n(masters[c].begin() + std::ptrdiff_t(p.local), p.hi - p.lo, full.begin() + std::ptrdiff_t(p.lo));
    muon_[c]->state_to_host(2, full.data());
    if (layer_wise_) sum_over_dp(full);
    masters[c] = std::move(full);
  }
  double sq[2] = {0.0, 0.0};
  for_each_counted_run([&](int c, std::size_t global, std::size_t local, std::size_t n, int kind) {
    if (masters[c].empty()) {
      sq[kind] += be.sum_squares(static_cast<const float*>(model_.chunk(c).params()) + global, n);
      return;
    }
    for (std::size_t i = 0; i < n; ++i) sq[kind] += double(masters[c][local + i]) * double(masters[c][local + i]);
  });
  return sum_over_holders(sq);
}

int64_t DataParallelOptimizer::grad_zeros() {
  Backend& be = model_.backend();
  double zeros[2] = {0.0, 0.0};  // exact as doubles up to 2^53 elements
  std::vector<float> host;
  for_each_counted_run([&](int c, std::size_t, std::size_t local, std::size_t n, int kind) {
    host.resize(n);
    be.copy_to_host(host.data(), grads_of(c) + local, n * sizeof(float));
    zeros[kind] += double(std::count(host.begin(), host.end(), 0.0f));
  });
  return int64_t(sum_over_holders(zeros));
}

void DataParallelOptimizer::apply(float lr, float decoupled_lr, float weight_decay, float grad_scale) {
  finish_param_gather();  // the previous step's, if a forward did not complete them all
  for (int c = 0; c < model_.num_chunks(); ++c) {
    adam_[c]->step(grads_of(c), lr, decoupled_lr, weight_decay, grad_scale);
    if (!muon_.empty()) muon_[c]->step(grads_of(c), lr, weight_decay, grad_scale);
    if (layer_wise_) broadcast_owned(c);
  }
  // Every rank's updated shards to every rank (in flight into the next forward with
  // --overlap-param-gather).
  if (gather_) gather_->start();
}

void DataParallelOptimizer::broadcast_owned(int c) {
  // Every tensor from the DP rank that stepped it (the masters stay with their owner).
  GptStage& st = model_.chunk(c);
  const DType dt = model_.backend().compute_dtype();
  const std::vector<ParamTensor>& tensors = st.layout().tensors;
  for (std::size_t ti = 0; ti < tensors.size(); ++ti) {
    if (owners_[c][ti] < 0) continue;
    void* at = static_cast<char*>(st.params()) + tensors[ti].offset * dtype_size(dt);
    model_.comms().dp->broadcast(at, tensors[ti].numel, act_elem_type(dt), owners_[c][ti]);
  }
}

void DataParallelOptimizer::sum_over_dp(std::vector<float>& full) {
  if (full.empty() || model_.grid().dp_size() == 1) return;
  Backend& be = model_.backend();
  float* dev = static_cast<float*>(be.alloc(full.size() * 4));
  be.copy_to_device(dev, full.data(), full.size() * 4);
  model_.comms().dp->all_reduce(dev, full.size(), ElemType::F32, ReduceOp::Sum);
  be.copy_to_host(full.data(), dev, full.size() * 4);
  be.release(dev);
}

void DataParallelOptimizer::set_steps(int64_t s) {
  for (auto& a : adam_) a->set_steps(s);
}

void DataParallelOptimizer::finish_param_gather() {
  if (gather_) gather_->finish();
}

int DataParallelOptimizer::param_gathers_in_last_forward() const {
  return gather_ ? gather_->completed_in_last_forward() : 0;
}

std::vector<float> DataParallelOptimizer::gather_moments(int c, int which) {
  Backend& be = model_.backend();
  AdamW& adam = *adam_[c];
  std::vector<float> mine(adam.local_size(), 0.0f);  // this rank's state (device and host parts), local order
  adam.state_to_host(which, mine.data());
  std::vector<float> full(model_.chunk(c).layout().total);
  if (!distributed_ || model_.grid().intra_dp_size() == 1) {
    for (const AdamW::Piece& p : adam.pieces())
      std::copy_n(mine.begin() + std::ptrdiff_t(p.local), p.hi - p.lo, full.begin() + std::ptrdiff_t(p.lo));
    if (!muon_.empty()) muon_[c]->state_to_host(which, full.data());
    if (layer_wise_) sum_over_dp(full);  // each element is held by one DP rank, zero on the others
    return full;
  }
  // Every rank's whole state array (padded shards) to every rank, then each bucket's shards back
  // into place. The communicator takes backend memory: gather through a device buffer. With hybrid
  // sharding inside the rank's instance (every instance holds the same state).
  const int dp = model_.grid().intra_dp_size(), r = model_.grid().intra_dp_rank();
  const std::size_t n = adam.local_size();
  float* dev = static_cast<float*>(be.alloc(std::max<std::size_t>(n * dp, 1) * 4));
  be.fill_zero(dev, n * dp * 4);
  if (n > 0) be.copy_to_device(dev + r * n, mine.data(), n * 4);
  model_.comms().dp_shard(false).all_gather(dev, dev + r * n, n, ElemType::F32);
  std::vector<float> all(n * dp);
  if (!all.empty()) be.copy_to_host(all.data(), dev, all.size() * 4);
  be.release(dev);
  // An expert bucket's shard q lives on the DP rank with this rank's EP index and EDP index q.
  const ProcessGrid& grid = model_.grid();
  for (const GradBucket& b : sync_.buckets(c))
    for (int q = 0; q < (b.expert ? grid.expert_dp_size() : dp); ++q) {
      const std::size_t lo = std::min(b.hi, b.lo + std::size_t(q) * b.shard), hi = std::min(b.hi, lo + b.shard);
      const std::size_t holder = std::size_t(b.expert ? grid.dp_rank_of_expert_dp(q) : q);
      std::copy_n(all.begin() + static_cast<std::ptrdiff_t>(holder * n + b.shard_offset), hi - lo,
                  full.begin() + static_cast<std::ptrdiff_t>(lo));
    }
  return full;
}

void DataParallelOptimizer::scatter_moments(int c, int which, const std::vector<float>& full) {
  AdamW& adam = *adam_[c];
  const std::size_t total = model_.chunk(c).layout().total;
  check(full.size() == total, "optimizer state of chunk {}: {} values, expected {}", c, full.size(), total);
  std::vector<float> mine(adam.local_size(), 0.0f);
  for (const AdamW::Piece& p : adam.pieces())
    std::copy_n(full.begin() + std::ptrdiff_t(p.lo), p.hi - p.lo, mine.begin() + std::ptrdiff_t(p.local));
  adam.state_from_host(which, mine.data());
  if (!muon_.empty()) muon_[c]->state_from_host(which, full.data());
}

std::vector<std::string> DataParallelOptimizer::state_names(const ParamTensor& t) const {
  if (!muon_.empty() && uses_muon(t)) return {"momentum_buffer"};
  if (adam_.front()->rule() == UpdateRule::lion && uses_muon(t)) return {"exp_avg"};
  return optimizer_state_names(adam_.front()->rule());
}

int DataParallelOptimizer::state_arrays() const {
  return static_cast<int>(optimizer_state_names(adam_.front()->rule()).size());
}

bool DataParallelOptimizer::has_master() const { return adam_.front()->has_separate_master(); }

void DataParallelOptimizer::params_changed() {
  for (auto& a : adam_) a->params_changed();
}

}  // namespace gptrain::parallel
