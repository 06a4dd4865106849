// The data-parallel gradient reduction of one step, bucket by bucket (grad_buckets.h), over the DP
// communicator's non-blocking collectives:
// - plain DP: a bucket is scaled by 1/DP (Megatron averages before summing) and all-reduced in place
//   in the chunk's gradient buffer; a bucket of routed-expert weights (expert parallelism) is reduced
//   over the expert-data-parallel group instead, still scaled by 1/DP;
// - --use-distributed-optimizer: a bucket is copied into its zero-padded staging block, scaled, and
//   reduce-scattered; this rank receives its shard of the sum (GradBucket::shard_offset).
// - --grad-reduce-in-bf16 (either way): the scaled bucket is cast to bf16 (round to nearest even) into a
//   bf16 copy, communicated and summed in bf16, and cast back to fp32 once the reduction is done (in
//   finish()); Megatron's bf16 gradient buffers are reduced the same way, scaled before the reduction.
// With --overlap-grad-reduce the DistributedGpt backward tells this object (GradsFinalListener) when
// each part of a chunk is final for the step, and every bucket whose gradients are then all final is
// launched at once while backward goes on; each notification also polls the reductions in flight
// (MPI progresses non-blocking collectives only inside MPI calls). Without overlap every bucket is
// launched by finish(), which in any case launches what is left (deferred buckets: after the
// model-parallel syncs) and waits for all, before the gradient norm and the optimizer read them.
// Every DP rank launches the same buckets in the same order (same schedule, same plan).
// Hybrid sharding (--num-distributed-optimizer-instances N > 1): the reduce-scatter runs inside the
// rank's instance (DP / N ranks) and each reduced shard is then all-reduced across the N instances;
// those all-reduces are launched in bucket launch order, each once its reduce-scatter is seen done
// (during backward with --overlap-grad-reduce), so every rank issues them in the same order.
#pragma once

#include "parallel/comm/communicator.h"
#include "parallel/pipeline/distributed_gpt.h"
#include "parallel/data_parallel/grad_buckets.h"

#include <memory>
#include <vector>

namespace gptrain::parallel {

class GradSync final : public GradsFinalListener {
 public:
  // bucket_elems: --ddp-bucket-size; overlap: launch during backward (registers with the model);
  // in_bf16: --grad-reduce-in-bf16.
  GradSync(DistributedGpt& model, bool distributed, std::size_t bucket_elems, bool overlap, bool in_bf16 = false);
  ~GradSync() override;
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  const std::vector<GradBucket>& buckets(int chunk) const { return chunks_[chunk].buckets; }
  // Distributed optimizer: chunk c's reduced gradient shards (GradBucket::shard_offset indexes them),
  // valid after finish().
  float* shard_grads(int chunk) { return chunks_[chunk].shard; }
  // Elements of chunk c's shard arrays (sum of its buckets' shards).
  std::size_t shard_elems(int chunk) const;

  void grads_final(int chunk, int group) override;
  // Launches the buckets not yet launched and waits for every reduction of the step.
  void finish();

  struct Stats {
    int buckets = 0;               // reductions of the step
    int launched_in_backward = 0;  // of which started before backward had ended
    int max_in_flight = 0;         // most started and not yet seen done at one time
  };
  const Stats& last_step() const { return last_; }

 private:
  struct ChunkSync {
    std::vector<GradBucket> buckets;
    std::vector<bool> launched;
    std::size_t next = 0;    // first bucket not yet considered this step (buckets sorted by ready_group)
    int last_group = -1;     // last backward part reported this step
    float* pad = nullptr;    // distributed: padded staging, sum of DP x shard
    float* shard = nullptr;  // distributed: reduced shards
    // --grad-reduce-in-bf16: what goes over the wire, bf16 (plain: the chunk's gradients at the same
    // offsets; distributed: the padded blocks, and the reduced shards in wire_shard).
    void* wire = nullptr;
    void* wire_shard = nullptr;
  };
  // The communicator that reduces bucket b: DP, or EDP for routed-expert weights (grad_buckets.h).
  Communicator& group_of(const GradBucket& b) const;
  void launch(int chunk, std::size_t b, bool in_backward);
  void cast_back(int chunk, std::size_t b);  // --grad-reduce-in-bf16: the reduced bf16 bucket to fp32
  int poll();                                // reductions still in flight

  DistributedGpt& model_;
  bool distributed_;
  bool overlap_;
  bool in_bf16_;       // --grad-reduce-in-bf16 with DP > 1
  bool communicates_;  // DP > 1 (plain DP with one replica has nothing to reduce)
  std::vector<ChunkSync> chunks_;
  std::vector<std::unique_ptr<PendingCollective>> in_flight_;  // launch order (null: nothing to wait for)
  std::vector<bool> seen_done_;
  // Hybrid sharding: the (chunk, bucket) of each in_flight_ entry, the first whose inter-instance
  // all-reduce is not launched yet, and those all-reduces.
  void launch_inter(std::size_t i);
  bool hybrid_ = false;
  std::vector<std::pair<int, std::size_t>> in_flight_bucket_;
  std::size_t next_inter_ = 0;
  std::vector<std::unique_ptr<PendingCollective>> inter_in_flight_;
  Stats cur_, last_;
};

}  // namespace gptrain::parallel
