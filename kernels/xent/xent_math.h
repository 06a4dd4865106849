// Fused softmax + cross-entropy maths shared by the twins and the vocab-parallel combine.
// A row's statistics over a set of columns are (max, sumexp = sum exp(l - max), target_logit). Two
// disjoint column sets merge exactly like an online softmax: rescale the sums to the larger max.
// The loss of a row is log(sumexp) + max - target_logit; its gradient per column is
// (exp(l - max) / sumexp - [col == target]) * dloss.
#pragma once

#include <cmath>

#include "kernels/common/hd.h"

namespace gptrain {

// Merge statistics (m_b, s_b) into (m_a, s_a). A side with s == 0 (no valid columns) is neutral.
GPTRAIN_HD inline void xent_merge(float* m_a, float* s_a, float m_b, float s_b) {
  if (s_b == 0.0f) return;
  if (*s_a == 0.0f) {
    *m_a = m_b;
    *s_a = s_b;
    return;
  }
  const float m = fmaxf(*m_a, m_b);
  *s_a = *s_a * expf(*m_a - m) + s_b * expf(m_b - m);
  *m_a = m;
}

GPTRAIN_HD inline float xent_row_loss(float row_max, float row_sumexp, float target_logit) {
  return logf(row_sumexp) + row_max - target_logit;
}

// Gradient of the loss of one row w.r.t. one logit, given e = exp(logit - row_max);
// is_target: this column is the row's target.
GPTRAIN_HD inline float xent_dlogit_from_exp(float e, float inv_sumexp, bool is_target, float dloss) {
  return (e * inv_sumexp - (is_target ? 1.0f : 0.0f)) * dloss;
}

GPTRAIN_HD inline float xent_dlogit(float logit, float row_max, float inv_sumexp, bool is_target, float dloss) {
  return xent_dlogit_from_exp(expf(logit - row_max), inv_sumexp, is_target, dloss);
}

}  // namespace gptrain
