// How the decoder layers are split over pipeline stages (Megatron's rules):
// - even: num_layers / PP each (must divide);
// - uneven: --decoder-first/last-pipeline-num-layers fix the ends, the middle stages split the rest
//   evenly;
// - interleaved (virtual) pipeline: each rank holds V model chunks of L layers; virtual stage
//   s = chunk * PP + pp_rank holds layers [s * L, (s + 1) * L). The embedding lives on virtual stage
//   0 (rank 0, chunk 0), the head on the last virtual stage (rank PP-1, chunk V-1).
#pragma once

#include "core/config/parallel_args.h"

#include <vector>

namespace gptrain::parallel {

struct ChunkRange {
  int first = 0;  // global layers [first, last)
  int last = 0;
  bool has_embedding = false;
  bool has_head = false;
  int virtual_stage = 0;  // chunk * PP + pp_rank
};

// Model chunks per pipeline rank (1 without interleaving). Throws Error naming the flags.
int num_model_chunks(const ParallelArgs& o, int num_layers);

// The chunks of pipeline rank `pp_rank`, in chunk order. Throws Error when the split is impossible.
std::vector<ChunkRange> pipeline_chunks(const ParallelArgs& o, int num_layers, int pp_rank);

}  // namespace gptrain::parallel
