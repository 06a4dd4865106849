// Per-head Q/K RMSNorm on CPU (without weights: scale 1, --qk-l2-norm): rows in parallel, each head's sums in double
// (as the row norms do); the weight gradients split by columns of HS, each thread summing its columns over rows and
// heads in order.
#include "kernels/qk_norm/qk_norm.h"

#include <cstddef>

#include "kernels/common/cpu_parallel.h"
#include "kernels/qk_norm/qk_norm_math.h"

namespace gptrain::cpu {

void qk_norm_forward(float* qkv, float* qk_saved, float* rstd, const float* q_weight, const float* k_weight, int N,
                     int NH, int NKV, int HS, float eps, bool zc) {
  const int heads = NH + NKV;
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * heads * HS, 1 << 14))
  for (int r = 0; r < N; ++r) {
    for (int j = 0; j < heads; ++j) {
      float* y = qkv + qk_norm_qkv_offset(std::size_t(r), j, NH, NKV, HS);
      float* x = qk_saved + qk_norm_saved_offset(std::size_t(r), j, NH, NKV, HS);
      const float* w = j < NH ? q_weight : k_weight;
      double sq = 0.0;
      for (int c = 0; c < HS; ++c) {
        x[c] = y[c];
        sq += static_cast<double>(x[c]) * x[c];
      }
      const float s = norm_rstd(static_cast<float>(sq / HS), eps);
      for (int c = 0; c < HS; ++c) y[c] = w ? x[c] * s * norm_gamma(w[c], zc) : x[c] * s;
      rstd[std::size_t(r) * heads + j] = s;
    }
  }
}

void qk_norm_backward(float* dqkv, float* dq_weight, float* dk_weight, const float* qk_saved, const float* q_weight,
                      const float* k_weight, const float* rstd, int N, int NH, int NKV, int HS, bool zc) {
  const int heads = NH + NKV;
  const std::size_t work = static_cast<std::size_t>(N) * heads * HS;
  // Weight gradients first: they read d(output), which the input gradient then overwrites in place.
  const int nt = threads_for(work, 1 << 15);
#pragma omp parallel num_threads(nt) if (dq_weight)
  if (dq_weight) {
    std::size_t c0, c1;
    split_range(static_cast<std::size_t>(HS), nt, omp_get_thread_num(), 16, &c0, &c1);
    for (int r = 0; r < N; ++r)
      for (int j = 0; j < heads; ++j) {
        const float* dy = dqkv + qk_norm_qkv_offset(std::size_t(r), j, NH, NKV, HS);
        const float* x = qk_saved + qk_norm_saved_offset(std::size_t(r), j, NH, NKV, HS);
        const float s = rstd[std::size_t(r) * heads + j];
        float* dw = j < NH ? dq_weight : dk_weight;
        for (std::size_t c = c0; c < c1; ++c) dw[c] += dy[c] * (x[c] * s);
      }
  }
#pragma omp parallel for schedule(static) num_threads(threads_for(work, 1 << 14))
  for (int r = 0; r < N; ++r) {
    for (int j = 0; j < heads; ++j) {
      float* d = dqkv + qk_norm_qkv_offset(std::size_t(r), j, NH, NKV, HS);
      const float* x = qk_saved + qk_norm_saved_offset(std::size_t(r), j, NH, NKV, HS);
      const float* w = j < NH ? q_weight : k_weight;
      const float s = rstd[std::size_t(r) * heads + j];
      double sum_gx = 0.0;
      auto g = [&](int c) { return w ? d[c] * norm_gamma(w[c], zc) : d[c]; };
      for (int c = 0; c < HS; ++c) sum_gx += static_cast<double>(g(c)) * (x[c] * s);
      const float mean_gx = static_cast<float>(sum_gx / HS);
      for (int c = 0; c < HS; ++c) d[c] = norm_dx(g(c), x[c] * s, s, 0.0f, mean_gx);
    }
  }
}

}  // namespace gptrain::cpu
