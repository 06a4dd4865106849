// Pipeline schedules as per-rank lists of operations (Megatron's orders):
// - 1F1B: warm-up forwards (PP - rank - 1), then one forward / one backward, then cool-down backwards;
//   at most PP micro-batches in flight on the first stage.
// - interleaved 1F1B (V model chunks per rank): micro-batches go through the chunks in groups of PP;
//   warm-up (PP - rank - 1) * 2 + (V - 1) * PP forwards; needs micro-batches % PP == 0.
// Executing a rank's list only ever waits on receives (sends are buffered), so any list consistent
// with a global order of the dependencies runs without deadlock; the unit tests check that.
#pragma once

#include <vector>

namespace gptrain::parallel {

struct PipeOp {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;  // model chunk on this rank (virtual stage = chunk * PP + rank)
};

std::vector<PipeOp> schedule_1f1b(int pp, int rank, int num_microbatches);
std::vector<PipeOp> schedule_interleaved(int pp, int rank, int num_microbatches, int num_chunks);
// Dispatch: interleaved when num_chunks > 1. Throws Error for impossible counts.
std::vector<PipeOp> pipeline_schedule(int pp, int rank, int num_microbatches, int num_chunks);

}  // namespace gptrain::parallel
