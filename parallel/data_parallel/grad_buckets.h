// Gradient buckets for data parallelism (Megatron's DDP buckets, --ddp-bucket-size): each model
// chunk's fp32 gradient buffer is cut into flat ranges of about `bucket_elems` elements, formed in
// reverse parameter order (the order in which backward finishes them) so that a bucket can be
// reduced over DP as soon as backward has written its last gradient, while backward goes on.
//
// The flat layout (param_layout.h) puts the weight-decayed tensors first and the others after, so a
// bucket never straddles that cut: buckets are formed from the end of each of the two regions
// towards its start, whole tensors at a time, closing once they hold >= bucket_elems elements. Within
// a region backward finishes tensors from high offsets to low, so every bucket is a contiguous range
// that becomes ready at one backward part (GptStage::grad_groups index: its latest tensor's).
//
// The same buckets are used with and without --overlap-grad-reduce (only the launch time differs),
// so both give the same bits. With --use-distributed-optimizer the buckets also define the
// optimizer shards, as Megatron: each bucket padded to a multiple of DP, rank r owning its r-th
// 1/DP (so every bucket is one equal-block reduce-scatter and one all-gather).
//
// Expert parallelism: the routed experts' weights are reduced over the expert-data-parallel group
// (EDP = DP / EP ranks hold the same experts), the other tensors over DP, so a bucket never mixes the
// two (it closes where expert-ness changes) and an expert bucket is sharded over EDP (Megatron keeps the
// expert parameters in buffers of their own for the same reason).
#pragma once

#include "core/model/param_layout.h"

#include <cstddef>
#include <vector>

namespace gptrain::parallel {

struct GradBucket {
  std::size_t lo = 0, hi = 0;  // flat range [lo, hi) of the chunk's gradient / parameter buffers
  int ready_group = 0;         // after this backward part (GptStage::grad_groups) all of it is final
  // Holds a tensor that finish_model_parallel_grads changes after backward (sequence-parallel norm
  // weights, the tied word embeddings of the first/last pipeline stage): reduced only after it.
  bool deferred = false;
  bool expert = false;  // routed-expert weights: reduced and sharded over the expert-data-parallel group
  // Distributed optimizer: shard = ceil((hi - lo) / D) elements per rank, D = DP (EDP for an expert
  // bucket); the bucket's padded block (D * shard) starts at pad_offset in the chunk's staging buffer; this rank's
  // shard at shard_offset in its shard arrays (moments, master weights, reduced gradients).
  std::size_t shard = 0;
  std::size_t pad_offset = 0;
  std::size_t shard_offset = 0;
  std::size_t size() const { return hi - lo; }
};

// The buckets of one chunk, in launch order (ready_group ascending; at a tie the weight-decayed
// region's first). groups: GptStage::grad_groups() (empty: sizes only, every ready_group 0, as the
// memory plan needs); deferred_tensor: per layout tensor, whether it
// is changed by finish_model_parallel_grads (empty: none). bucket_elems >= 1. expert_tensor: per layout
// tensor, whether it holds routed-expert weights (empty: none); expert_dp: EDP (0: dp).
std::vector<GradBucket> plan_grad_buckets(const ParamLayout& layout, const std::vector<std::vector<int>>& groups,
                                          const std::vector<bool>& deferred_tensor, std::size_t bucket_elems, int dp,
                                          const std::vector<bool>& expert_tensor = {}, int expert_dp = 0);

// Megatron's default --ddp-bucket-size: max(40M, 1M x DP) elements.
std::size_t default_bucket_elems(int dp);

}  // namespace gptrain::parallel
