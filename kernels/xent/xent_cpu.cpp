// Fused softmax + cross-entropy on CPU, row-parallel. The statistics pass reads each logits row twice
// (max, then sum of exp) and stores three floats per row; the backward pass reads the row once more and
// writes dlogits in place if asked: the (N, V) probability tensor is never materialised. The sum of
// exp is taken in float over 512-column chunks (vectorised) and in double across chunks.
#include "kernels/xent/xent.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "kernels/common/cpu_exp.h"
#include "kernels/common/cpu_parallel.h"
#include "kernels/xent/xent_math.h"

namespace gptrain::cpu {

namespace {
bool holds_target(int32_t target, int vocab_start, int V_valid_local) {
  return target >= vocab_start && target < vocab_start + V_valid_local;
}
}  // namespace

// (max, sum exp) of one row's valid columns; sums in float over 512-column chunks, double across.
GPTRAIN_CPU_CLONES void xent_row_stats(const float* l, int V_valid_local, float* row_max, float* row_sumexp) {
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int c = 0; c < V_valid_local; ++c) m = l[c] > m ? l[c] : m;  // not fmaxf: a scalar libm call
  double s = 0.0;
  for (int c0 = 0; c0 < V_valid_local; c0 += 512) {
    const int c1 = std::min(V_valid_local, c0 + 512);
    float part = 0.0f;
#pragma omp simd reduction(+ : part)
    for (int c = c0; c < c1; ++c) part += exp_simd(l[c] - m);
    s += part;
  }
  *row_max = V_valid_local > 0 ? m : 0.0f;
  *row_sumexp = static_cast<float>(s);
}

GPTRAIN_CPU_CLONES void xent_row_backward(float* d, const float* l, int V_local, int V_valid_local, int tcol, float m,
                                          float inv, float dl) {
#pragma omp simd
  for (int c = 0; c < V_valid_local; ++c) d[c] = xent_dlogit_from_exp(exp_simd(l[c] - m), inv, c == tcol, dl);
  for (int c = V_valid_local; c < V_local; ++c) d[c] = 0.0f;
}

void xent_stats(XentStats stats, const float* logits, const int32_t* targets, int N, int V_local, int V_valid_local,
                int vocab_start) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * V_local, 1 << 15))
  for (int r = 0; r < N; ++r) {
    const float* l = logits + static_cast<std::size_t>(r) * V_local;
    xent_row_stats(l, V_valid_local, &stats.row_max[r], &stats.row_sumexp[r]);
    stats.target_logit[r] = holds_target(targets[r], vocab_start, V_valid_local) ? l[targets[r] - vocab_start] : 0.0f;
  }
}

void xent_backward(float* dlogits, const float* logits, const int32_t* targets, const float* row_max,
                   const float* row_sumexp, const float* dloss, int N, int V_local, int V_valid_local,
                   int vocab_start) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * V_local, 1 << 15))
  for (int r = 0; r < N; ++r) {
    const float* l = logits + static_cast<std::size_t>(r) * V_local;
    float* d = dlogits + static_cast<std::size_t>(r) * V_local;
    const float m = row_max[r], inv = 1.0f / row_sumexp[r], dl = dloss[r];
    if (dl == 0.0f) {  // masked row: no gradient (and no NaN from a row that never saw its stats)
      for (int c = 0; c < V_local; ++c) d[c] = 0.0f;
      continue;
    }
    const int tcol = holds_target(targets[r], vocab_start, V_valid_local) ? targets[r] - vocab_start : -1;
    xent_row_backward(d, l, V_local, V_valid_local, tcol, m, inv, dl);
  }
}

void xent_loss(float* losses, XentStats stats, int N) {
  for (int r = 0; r < N; ++r) losses[r] = xent_row_loss(stats.row_max[r], stats.row_sumexp[r], stats.target_logit[r]);
}

}  // namespace gptrain::cpu
