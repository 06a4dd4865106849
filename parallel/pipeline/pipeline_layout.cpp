#include "parallel/pipeline/pipeline_layout.h"

#include "core/common/error.h"

namespace gptrain::parallel {

int num_model_chunks(const ParallelArgs& o, int num_layers) {
  const int pp = o.pipeline_model_parallel_size;
  if (o.num_virtual_stages_per_pipeline_rank) {
    const int v = *o.num_virtual_stages_per_pipeline_rank;
    check(num_layers % (pp * v) == 0,
          "--num-layers {} is not divisible by --pipeline-model-parallel-size {} x "
          "--num-virtual-stages-per-pipeline-rank {}",
          num_layers, pp, v);
    return v;
  }
  if (o.num_layers_per_virtual_pipeline_stage) {
    const int l = *o.num_layers_per_virtual_pipeline_stage;
    check(num_layers % pp == 0 && (num_layers / pp) % l == 0,
          "--num-layers {} / --pipeline-model-parallel-size {} is not a multiple of "
          "--num-layers-per-virtual-pipeline-stage {}",
          num_layers, pp, l);
    return num_layers / pp / l;
  }
  return 1;
}

std::vector<ChunkRange> pipeline_chunks(const ParallelArgs& o, int num_layers, int pp_rank) {
  const int pp = o.pipeline_model_parallel_size;
  check(pp_rank >= 0 && pp_rank < pp, "pipeline rank {} outside [0, {})", pp_rank, pp);
  const int v = num_model_chunks(o, num_layers);
  std::vector<ChunkRange> out;
  if (v > 1) {
    const int per = num_layers / (pp * v);
    for (int c = 0; c < v; ++c) {
      ChunkRange r;
      r.virtual_stage = c * pp + pp_rank;
      r.first = r.virtual_stage * per;
      r.last = r.first + per;
      r.has_embedding = r.virtual_stage == 0;
      r.has_head = r.virtual_stage == pp * v - 1;
      out.push_back(r);
    }
    return out;
  }
  // Non-interleaved: per-stage layer counts.
  std::vector<int> counts(pp, 0);
  const bool has_first = o.decoder_first_pipeline_num_layers.has_value();
  const bool has_last = o.decoder_last_pipeline_num_layers.has_value();
  int rest = num_layers, middle = pp;
  if (has_first) {
    counts[0] = *o.decoder_first_pipeline_num_layers;
    check(counts[0] >= 0, "--decoder-first-pipeline-num-layers must be >= 0");
    rest -= counts[0];
    --middle;
  }
  if (has_last) {
    counts[pp - 1] = *o.decoder_last_pipeline_num_layers;
    check(counts[pp - 1] >= 0, "--decoder-last-pipeline-num-layers must be >= 0");
    rest -= counts[pp - 1];
    --middle;
  }
  check(rest >= 0, "--decoder-first/last-pipeline-num-layers take more than --num-layers {}", num_layers);
  if (middle > 0) {
    check(rest % middle == 0,
          "{} layers left for {} pipeline stages do not split evenly (--num-layers {}, "
          "--pipeline-model-parallel-size {}{})",
          rest, middle, num_layers, pp,
          has_first || has_last ? ", after --decoder-first/last-pipeline-num-layers" : "");
    for (int s = 0; s < pp; ++s)
      if (!((s == 0 && has_first) || (s == pp - 1 && has_last))) counts[s] = rest / middle;
  } else {
    check(rest == 0, "--decoder-first/last-pipeline-num-layers must add up to --num-layers {} with 2 stages",
          num_layers);
  }
  ChunkRange r;
  for (int s = 0; s < pp_rank; ++s) r.first += counts[s];
  r.last = r.first + counts[pp_rank];
  r.has_embedding = pp_rank == 0;
  r.has_head = pp_rank == pp - 1;
  r.virtual_stage = pp_rank;
  out.push_back(r);
  return out;
}

}  // namespace gptrain::parallel
