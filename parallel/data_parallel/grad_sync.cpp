#include "parallel/data_parallel/grad_sync.h"

#include "core/common/error.h"
#include "core/common/profile_range.h"

#include <algorithm>

namespace gptrain::parallel {
namespace {
std::size_t shard_elems_of(const std::vector<GradBucket>& buckets) {
  return buckets.empty() ? 0 : buckets.back().shard_offset + buckets.back().shard;
}
}  // namespace

GradSync::GradSync(DistributedGpt& model, bool distributed, std::size_t bucket_elems, bool overlap, bool in_bf16)
    : model_(model), distributed_(distributed), overlap_(overlap) {
  const int dp = model_.grid().dp_cp_size();
  communicates_ = dp > 1;
  hybrid_ = distributed_ && model_.grid().dist_opt_instances() > 1;
  // The distributed optimizer's shards: over DP (EDP), or over the rank's instance with hybrid sharding.
  const int shard_dp = distributed_ ? model_.grid().intra_dp_size() : dp;
  const int shard_edp = distributed_ ? model_.grid().intra_expert_dp_size() : model_.grid().expert_dp_size();
  in_bf16_ = in_bf16 && communicates_;  // one replica: nothing is reduced, nothing rounded
  Backend& be = model_.backend();
  for (int c = 0; c < model_.num_chunks(); ++c) {
    GptStage& st = model_.chunk(c);
    ChunkSync s;
    s.buckets = plan_grad_buckets(st.layout(), st.grad_groups(), model_.model_parallel_synced(c), bucket_elems,
                                  shard_dp, model_.expert_tensors(c), shard_edp);
    s.launched.assign(s.buckets.size(), false);
    if (distributed_) {
      std::size_t pad = 0;
      for (const GradBucket& b : s.buckets) pad += b.shard * std::size_t(group_of(b).size());
      s.pad = static_cast<float*>(be.alloc(std::max<std::size_t>(pad, 1) * 4));
      be.fill_zero(s.pad, pad * 4);  // the padding tails stay zero
      s.shard = static_cast<float*>(be.alloc(std::max<std::size_t>(shard_elems_of(s.buckets), 1) * 4));
      if (in_bf16_) {
        s.wire = be.alloc(std::max<std::size_t>(pad, 1) * 2);
        s.wire_shard = be.alloc(std::max<std::size_t>(shard_elems_of(s.buckets), 1) * 2);
      }
    } else if (in_bf16_) {
      s.wire = be.alloc(std::max<std::size_t>(st.layout().total, 1) * 2);
    }
    chunks_.push_back(std::move(s));
  }
  if (overlap_ && communicates_) model_.set_grads_final_listener(this);
}

GradSync::~GradSync() {
  if (overlap_ && communicates_) model_.set_grads_final_listener(nullptr);
  in_flight_.clear();  // waits
  for (ChunkSync& s : chunks_) {
    if (s.pad) model_.backend().release(s.pad);
    if (s.shard) model_.backend().release(s.shard);
    if (s.wire) model_.backend().release(s.wire);
    if (s.wire_shard) model_.backend().release(s.wire_shard);
  }
}

std::size_t GradSync::shard_elems(int chunk) const { return shard_elems_of(chunks_[chunk].buckets); }

void GradSync::grads_final(int chunk, int group) {
  ChunkSync& s = chunks_[chunk];
  check(group > s.last_group,
        "gradient buckets of model chunk {}: backward part {} finished twice in one step (with "
        "--overlap-grad-reduce, reduce the gradients after every forward_backward)",
        chunk, group);
  s.last_group = group;
  for (; s.next < s.buckets.size() && s.buckets[s.next].ready_group <= group; ++s.next)
    if (!s.buckets[s.next].deferred) launch(chunk, s.next, true);
  poll();
}

Communicator& GradSync::group_of(const GradBucket& b) const {
  if (distributed_) return model_.comms().dp_shard(b.expert);
  return b.expert ? *model_.comms().expert_dp : *model_.comms().dp;
}

void GradSync::launch(int chunk, std::size_t bi, bool in_backward) {
  ProfileRange range("dp-bucket-launch");
  ChunkSync& s = chunks_[chunk];
  const GradBucket& b = s.buckets[bi];
  s.launched[bi] = true;
  Backend& be = model_.backend();
  // Expert buckets sum over the ranks that hold the same experts (EDP); their gradients already hold
  // every EP rank's tokens, so both kinds are averaged over the whole DP (Megatron's scaling).
  Communicator& dp = group_of(b);
  const int n = dp.size();
  const float scale = 1.0f / float(model_.grid().dp_cp_size());
  float* g = model_.chunk(chunk).grads() + b.lo;
  if (distributed_) {
    float* pad = s.pad + b.pad_offset;
    if (n == 1) {
      be.copy(s.shard + b.shard_offset, g, b.size() * 4);
      if (scale != 1.0f) be.scale_inplace(s.shard + b.shard_offset, scale, b.size());
      if (!hybrid_) return;
      // One rank per instance: the shard is the whole bucket, only the inter-instance sum is left.
      in_flight_.push_back(nullptr);
    } else {
      be.copy(pad, g, b.size() * 4);
      be.scale_inplace(pad, scale, b.size());
      if (in_bf16_) {
        const std::size_t block = b.shard * std::size_t(n);  // the zero tail casts to bf16 zeros
        uint16_t* wire = static_cast<uint16_t*>(s.wire) + b.pad_offset;
        be.convert(wire, DType::BF16, pad, DType::F32, block);
        in_flight_.push_back(dp.ireduce_scatter(static_cast<uint16_t*>(s.wire_shard) + b.shard_offset, wire, b.shard,
                                                ElemType::BF16, ReduceOp::Sum));
      } else {
        in_flight_.push_back(dp.ireduce_scatter(s.shard + b.shard_offset, pad, b.shard, ElemType::F32, ReduceOp::Sum));
      }
    }
  } else {
    if (scale != 1.0f) be.scale_inplace(g, scale, b.size());  // Megatron averages over DP before the reduction
    if (n == 1) return;
    if (in_bf16_) {
      uint16_t* wire = static_cast<uint16_t*>(s.wire) + b.lo;
      be.convert(wire, DType::BF16, g, DType::F32, b.size());
      in_flight_.push_back(dp.iall_reduce(wire, b.size(), ElemType::BF16, ReduceOp::Sum));
    } else {
      in_flight_.push_back(dp.iall_reduce(g, b.size(), ElemType::F32, ReduceOp::Sum));
    }
  }
  seen_done_.push_back(false);
  if (hybrid_) in_flight_bucket_.emplace_back(chunk, bi);
  ++cur_.buckets;
  if (in_backward) ++cur_.launched_in_backward;
  cur_.max_in_flight = std::max(cur_.max_in_flight, poll());
}

int GradSync::poll() {
  int pending = 0;
  for (std::size_t i = 0; i < in_flight_.size(); ++i) {
    if (!seen_done_[i]) seen_done_[i] = !in_flight_[i] || in_flight_[i]->test();
    pending += seen_done_[i] ? 0 : 1;
  }
  // In launch order only: a later bucket's reduce-scatter may finish first on one rank and not on another.
  while (hybrid_ && next_inter_ < in_flight_.size() && seen_done_[next_inter_]) launch_inter(next_inter_++);
  for (auto& p : inter_in_flight_) p->test();
  return pending;
}

void GradSync::launch_inter(std::size_t i) {
  const auto [chunk, bi] = in_flight_bucket_[i];
  const GradBucket& b = chunks_[chunk].buckets[bi];
  inter_in_flight_.push_back(model_.comms().dp_inter->iall_reduce(chunks_[chunk].shard + b.shard_offset, b.shard,
                                                                  ElemType::F32, ReduceOp::Sum));
}

void GradSync::cast_back(int chunk, std::size_t bi) {
  ChunkSync& s = chunks_[chunk];
  const GradBucket& b = s.buckets[bi];
  Backend& be = model_.backend();
  if (distributed_) {
    be.convert(s.shard + b.shard_offset, DType::F32, static_cast<const uint16_t*>(s.wire_shard) + b.shard_offset,
               DType::BF16, b.shard);
  } else {
    be.convert(model_.chunk(chunk).grads() + b.lo, DType::F32, static_cast<const uint16_t*>(s.wire) + b.lo, DType::BF16,
               b.size());
  }
}

void GradSync::finish() {
  for (int c = 0; c < static_cast<int>(chunks_.size()); ++c)
    for (std::size_t b = 0; b < chunks_[c].buckets.size(); ++b)
      if (!chunks_[c].launched[b]) launch(c, b, false);
  ProfileRange wait_range("dp-wait");
  for (std::size_t i = 0; i < in_flight_.size(); ++i) {
    if (in_flight_[i]) in_flight_[i]->wait();
    seen_done_[i] = true;
  }
  if (hybrid_) {
    while (next_inter_ < in_flight_.size()) launch_inter(next_inter_++);
    for (auto& p : inter_in_flight_) p->wait();
    inter_in_flight_.clear();
    in_flight_bucket_.clear();
    next_inter_ = 0;
  }
  wait_range.end();
  in_flight_.clear();
  seen_done_.clear();
  if (in_bf16_) {
    ProfileRange cast_range("dp-bf16-to-fp32");
    for (int c = 0; c < static_cast<int>(chunks_.size()); ++c)
      for (std::size_t b = 0; b < chunks_[c].buckets.size(); ++b)
        if (group_of(chunks_[c].buckets[b]).size() > 1) cast_back(c, b);
  }
  for (ChunkSync& s : chunks_) {
    s.launched.assign(s.buckets.size(), false);
    s.next = 0;
    s.last_group = -1;
  }
  last_ = cur_;
  cur_ = Stats{};
}

}  // namespace gptrain::parallel
