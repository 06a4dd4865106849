#include "parallel/data_parallel/param_gather.h"

#include "core/common/error.h"
#include "parallel/tensor/tp_hooks.h"

#include <algorithm>

namespace gptrain::parallel {

ParamGather::ParamGather(DistributedGpt& model, const GradSync& sync, bool overlap)
    : model_(model), sync_(sync), overlap_(overlap) {
  const int dp = model_.grid().dp_cp_size();
  communicates_ = dp > 1;
  Backend& be = model_.backend();
  const std::size_t es = dtype_size(be.compute_dtype());
  for (int c = 0; c < model_.num_chunks(); ++c) {
    const std::vector<GradBucket>& buckets = sync_.buckets(c);
    ChunkGather g;
    std::size_t pad = 0;
    for (const GradBucket& b : buckets) pad += b.shard * std::size_t(group_of(b).size());
    g.pad = be.alloc(std::max<std::size_t>(pad, 1) * es);
    g.pending.resize(buckets.size());
    const GptStage& st = model_.chunk(c);
    for (const std::vector<int>& reads : st.param_reads()) {
      std::vector<std::size_t> need;
      for (std::size_t b = 0; b < buckets.size(); ++b)
        for (int t : reads) {
          const ParamTensor& pt = st.layout().tensors[t];
          if (pt.offset < buckets[b].hi && pt.offset + pt.numel > buckets[b].lo) {
            need.push_back(b);
            break;
          }
        }
      g.part_buckets.push_back(need);
    }
    chunks_.push_back(std::move(g));
  }
  if (overlap_ && communicates_) model_.set_params_needed_listener(this);
}

ParamGather::~ParamGather() {
  if (overlap_ && communicates_) model_.set_params_needed_listener(nullptr);
  for (ChunkGather& g : chunks_) {
    g.pending.clear();  // waits
    model_.backend().release(g.pad);
  }
}

void ParamGather::start() {
  finish();
  last_in_forward_ = in_forward_;
  in_forward_ = 0;
  if (!communicates_) return;
  Backend& be = model_.backend();
  const std::size_t es = dtype_size(be.compute_dtype());
  const ElemType et = act_elem_type(be.compute_dtype());
  for (int c = 0; c < model_.num_chunks(); ++c) {
    ChunkGather& g = chunks_[c];
    const std::vector<GradBucket>& buckets = sync_.buckets(c);
    char* params = static_cast<char*>(model_.chunk(c).params());
    // Forward order: buckets are planned in backward order, so the last one is needed first.
    for (std::size_t i = buckets.size(); i-- > 0;) {
      const GradBucket& b = buckets[i];
      Communicator& group = group_of(b);
      if (group.size() == 1) continue;  // an expert bucket with EDP 1: the whole bucket is this rank's
      const int r = group.rank();
      char* block = static_cast<char*>(g.pad) + b.pad_offset * es;
      char* mine = block + std::size_t(r) * b.shard * es;
      const std::size_t lo = std::min(b.hi, b.lo + std::size_t(r) * b.shard), hi = std::min(b.hi, lo + b.shard);
      if (hi > lo) be.copy(mine, params + lo * es, (hi - lo) * es);
      g.pending[i] = group.iall_gather(block, mine, b.shard, et);
    }
  }
  if (!overlap_) finish();
}

Communicator& ParamGather::group_of(const GradBucket& b) const { return model_.comms().dp_shard(b.expert); }

void ParamGather::complete(int c, std::size_t b) {
  ChunkGather& g = chunks_[c];
  if (!g.pending[b]) return;
  g.pending[b]->wait();
  g.pending[b].reset();
  const GradBucket& bk = sync_.buckets(c)[b];
  const std::size_t es = dtype_size(model_.backend().compute_dtype());
  model_.backend().copy(static_cast<char*>(model_.chunk(c).params()) + bk.lo * es,
                        static_cast<char*>(g.pad) + bk.pad_offset * es, bk.size() * es);
}

void ParamGather::finish() {
  for (int c = 0; c < static_cast<int>(chunks_.size()); ++c)
    for (std::size_t b = chunks_[c].pending.size(); b-- > 0;) complete(c, b);
}

void ParamGather::params_needed(int chunk, int part) {
  ChunkGather& g = chunks_[chunk];
  check(part >= 0 && std::size_t(part) < g.part_buckets.size(), "parameter gather: chunk {} has no forward part {}",
        chunk, part);
  for (std::size_t b : g.part_buckets[part]) {
    if (!g.pending[b]) continue;
    complete(chunk, b);
    ++in_forward_;
  }
  for (auto& p : g.pending)  // progress the rest (MPI advances non-blocking calls only when polled)
    if (p) p->test();
}

}  // namespace gptrain::parallel
