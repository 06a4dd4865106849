// The distributed optimizer's parameter all-gather, bucket by bucket (grad_buckets.h): after the
// step, every rank's updated shard of each bucket goes to every rank through a padded staging block,
// then back into the parameter buffer. Without --overlap-param-gather start() waits for all of them;
// with it, start() returns with the gathers in flight (issued in forward order: the embedding's
// buckets first) and the next forward waits, part by part, only for the buckets that hold the
// parameters the part reads (DistributedGpt's ParamsNeededListener), polling the others. finish()
// completes whatever is still in flight: before the next step and before checkpoints are written or
// read. The parameters are the same bits either way; only the time they arrive differs. Buckets of
// routed-expert weights are sharded over, and gathered from, the expert-data-parallel group.
#pragma once

#include "parallel/comm/communicator.h"
#include "parallel/pipeline/distributed_gpt.h"
#include "parallel/data_parallel/grad_sync.h"

#include <memory>
#include <vector>

namespace gptrain::parallel {

class ParamGather final : public ParamsNeededListener {
 public:
  ParamGather(DistributedGpt& model, const GradSync& sync, bool overlap);
  ~ParamGather() override;
  ParamGather(const ParamGather&) = delete;
  ParamGather& operator=(const ParamGather&) = delete;

  // After the optimizer has updated this rank's shards in the parameter buffers.
  void start();
  void finish();
  void params_needed(int chunk, int part) override;
  // Buckets whose gather the previous forward completed (they were in flight when start() returned).
  int completed_in_last_forward() const { return last_in_forward_; }

 private:
  struct ChunkGather {
    void* pad = nullptr;                                      // a (DP x shard) block per bucket, compute dtype
    std::vector<std::unique_ptr<PendingCollective>> pending;  // per bucket; null: none in flight
    std::vector<std::vector<std::size_t>> part_buckets;       // per forward part: buckets it reads
  };
  void complete(int chunk, std::size_t bucket);
  // DP, or EDP for an expert bucket (with hybrid sharding: their part in this rank's instance)
  Communicator& group_of(const GradBucket& b) const;

  DistributedGpt& model_;
  const GradSync& sync_;
  bool overlap_;
  bool communicates_;
  std::vector<ChunkGather> chunks_;
  int in_forward_ = 0, last_in_forward_ = 0;
};

}  // namespace gptrain::parallel
