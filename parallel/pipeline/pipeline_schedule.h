// Pipeline schedules as per-rank lists of operations (Megatron's orders):
// - 1F1B: warm-up forwards (PP - rank - 1), then one forward / one backward, then cool-down backwards;
//   at most PP micro-batches in flight on the first stage.
// - interleaved 1F1B (V model chunks per rank): micro-batches go through the chunks in groups of PP;
//   warm-up (PP - rank - 1) * 2 + (V - 1) * PP forwards; needs micro-batches % PP == 0.
// Each list is a warm-up of forwards, a steady state of (forward, backward) pairs, then a cool-down of
// backwards; pipeline_p2p.h batches the transfers per step of that structure as Megatron does.
#pragma once

#include <vector>

namespace gptrain::parallel {

struct PipeOp {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;  // model chunk on this rank (virtual stage = chunk * PP + rank)
};

// Forwards of the warm-up phase of rank `rank` (the ops before the first (forward, backward) pair).
int pipeline_warmup(int pp, int rank, int num_microbatches, int num_chunks);

std::vector<PipeOp> schedule_1f1b(int pp, int rank, int num_microbatches);
std::vector<PipeOp> schedule_interleaved(int pp, int rank, int num_microbatches, int num_chunks);
// Dispatch: interleaved when num_chunks > 1. Throws Error for impossible counts.
std::vector<PipeOp> pipeline_schedule(int pp, int rank, int num_microbatches, int num_chunks);

// Per model chunk, the most micro-batches whose activations are alive at once on rank `rank` during a
// training step (1F1B: min(PP - rank, micro-batches)): the activation arenas the executor keeps.
std::vector<int> pipeline_peak_in_flight(int pp, int rank, int num_microbatches, int num_chunks);

}  // namespace gptrain::parallel
