#include "parallel/pipeline/pipeline_schedule.h"

#include "core/common/error.h"

#include <algorithm>

namespace gptrain::parallel {

int pipeline_warmup(int pp, int rank, int m, int v) {
  return v > 1 ? std::min((pp - rank - 1) * 2 + (v - 1) * pp, m * v) : std::min(pp - rank - 1, m);
}

std::vector<PipeOp> schedule_1f1b(int pp, int rank, int m) {
  std::vector<PipeOp> ops;
  const int warmup = pipeline_warmup(pp, rank, m, 1);
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.push_back({true, f, 0});
  while (f < m) {
    ops.push_back({true, f++, 0});
    ops.push_back({false, b++, 0});
  }
  while (b < m) ops.push_back({false, b++, 0});
  return ops;
}

std::vector<PipeOp> schedule_interleaved(int pp, int rank, int m, int v) {
  check(m % pp == 0,
        "the interleaved pipeline needs the micro-batches per step ({}) to be a multiple of "
        "--pipeline-model-parallel-size {}",
        m, pp);
  const int total = m * v;
  // k-th forward (backward) of this rank: micro-batch groups of PP, walking the chunks in order
  // (backward: in reverse).
  auto mb_of = [&](int k) { return (k / (pp * v)) * pp + k % pp; };
  auto chunk_of = [&](int k, bool fwd) {
    const int c = (k / pp) % v;
    return fwd ? c : v - 1 - c;
  };
  const int warmup = pipeline_warmup(pp, rank, m, v);
  std::vector<PipeOp> ops;
  int f = 0, b = 0;
  for (; f < warmup; ++f) ops.push_back({true, mb_of(f), chunk_of(f, true)});
  while (f < total) {
    ops.push_back({true, mb_of(f), chunk_of(f, true)});
    ++f;
    ops.push_back({false, mb_of(b), chunk_of(b, false)});
    ++b;
  }
  for (; b < total; ++b) ops.push_back({false, mb_of(b), chunk_of(b, false)});
  return ops;
}

std::vector<PipeOp> pipeline_schedule(int pp, int rank, int m, int v) {
  check(pp >= 1 && rank >= 0 && rank < pp && m >= 1 && v >= 1,
        "pipeline schedule: pp {} rank {} micro-batches {} chunks {}", pp, rank, m, v);
  return v > 1 ? schedule_interleaved(pp, rank, m, v) : schedule_1f1b(pp, rank, m);
}

std::vector<int> pipeline_peak_in_flight(int pp, int rank, int m, int v) {
  std::vector<int> live(v, 0), peak(v, 0);
  for (const PipeOp& op : pipeline_schedule(pp, rank, m, v)) {
    live[op.chunk] += op.forward ? 1 : -1;
    peak[op.chunk] = std::max(peak[op.chunk], live[op.chunk]);
  }
  return peak;
}

}  // namespace gptrain::parallel
