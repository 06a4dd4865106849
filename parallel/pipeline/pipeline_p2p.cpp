#include "parallel/pipeline/pipeline_p2p.h"

#include "core/common/error.h"

namespace gptrain::parallel {

std::vector<PipeStep> pipeline_p2p_steps(const std::vector<PipeOp>& ops, int pp, int rank, int num_chunks, int warmup) {
  check(pp >= 1 && rank >= 0 && rank < pp && num_chunks >= 1 && warmup >= 0,
        "pipeline p2p: pp {} rank {} chunks {} warm-up {}", pp, rank, num_chunks, warmup);
  const int last_vs = pp * num_chunks - 1;
  const int n = static_cast<int>(ops.size());
  auto vs_of = [&](const PipeOp& op) {
    check(op.chunk >= 0 && op.chunk < num_chunks, "pipeline p2p: op chunk {} outside [0, {})", op.chunk, num_chunks);
    return op.chunk * pp + rank;
  };
  std::vector<PipeStep> steps;
  for (int i = 0; i < n;) {
    const bool pair = i >= warmup && i + 1 < n && ops[i].forward && !ops[i + 1].forward;
    steps.push_back({i, pair ? 2 : 1, {}});
    i += pair ? 2 : 1;
  }
  steps.push_back({n, 0, {}});
  for (std::size_t s = 0; s + 1 < steps.size(); ++s) {
    // What this step needs: the previous stage's activation, the next stage's gradient.
    for (int i = steps[s].first; i < steps[s].first + steps[s].count; ++i) {
      const PipeOp& op = ops[i];
      const int vs = vs_of(op);
      if (op.forward && vs > 0) steps[s].batch.push_back({false, (vs - 1) % pp, {true, op.microbatch, vs}});
      if (!op.forward && vs < last_vs) steps[s].batch.push_back({false, (vs + 1) % pp, {false, op.microbatch, vs}});
    }
    // What it produces goes out in the next step's batch, ahead of that step's receives.
    std::vector<PipeTransfer> sends;
    for (int i = steps[s].first; i < steps[s].first + steps[s].count; ++i) {
      const PipeOp& op = ops[i];
      const int vs = vs_of(op);
      if (op.forward && vs < last_vs) sends.push_back({true, (vs + 1) % pp, {true, op.microbatch, vs + 1}});
      if (!op.forward && vs > 0) sends.push_back({true, (vs - 1) % pp, {false, op.microbatch, vs - 1}});
    }
    steps[s + 1].batch = std::move(sends);
  }
  return steps;
}

std::vector<PipeOp> forward_only_schedule(int m, int v) {
  // Sorted by (micro-batch, chunk), every rank's list follows one global dependency order.
  std::vector<PipeOp> ops;
  for (int mb = 0; mb < m; ++mb)
    for (int c = 0; c < v; ++c) ops.push_back({true, mb, c});
  return ops;
}

}  // namespace gptrain::parallel
