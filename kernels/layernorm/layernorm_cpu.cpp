// LayerNorm / RMSNorm on CPU. Rows are independent, so forward and the input gradient run row-parallel
// with the per-row sums in double (C is at most a few thousand: cheap, and removes any doubt about
// cancellation). The weight/bias gradients are column sums over all rows: a second pass split by
// column blocks, each thread recomputing xhat for its columns, keeps them deterministic.
// RMSNorm is LayerNorm with mean fixed at 0 and no bias, so both share one implementation.
#include "kernels/layernorm/layernorm_cpu.h"

#include <cmath>
#include <cstddef>

#include "kernels/common/cpu_parallel.h"
#include "kernels/layernorm/layernorm_math.h"

namespace gptrain::cpu {
namespace {

void norm_forward(float* out, float* mean_out, float* rstd_out, const float* inp, const float* weight,
                  const float* bias, int N, int C, float eps, bool center) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast<std::size_t>(N) * C, 1 << 14))
  for (int i = 0; i < N; ++i) {
    const float* x = inp + static_cast<std::size_t>(i) * C;
    float* y = out + static_cast<std::size_t>(i) * C;
    double sum = 0.0;
    if (center) {
#pragma omp simd reduction(+ : sum)
      for (int c = 0; c < C; ++c) sum += x[c];
    }
    const float m = static_cast<float>(sum / C);
    double sq = 0.0;
#pragma omp simd reduction(+ : sq)
    for (int c = 0; c < C; ++c) {
      const double d = static_cast<double>(x[c]) - m;
      sq += d * d;
    }
    const float s = norm_rstd(static_cast<float>(sq / C), eps);
    if (bias != nullptr) {
#pragma omp simd
      for (int c = 0; c < C; ++c) y[c] = (x[c] - m) * s * weight[c] + bias[c];
    } else {
#pragma omp simd
      for (int c = 0; c < C; ++c) y[c] = (x[c] - m) * s * weight[c];
    }
    if (mean_out != nullptr) mean_out[i] = m;
    rstd_out[i] = s;
  }
}

void norm_backward(float* dinp_acc, float* dweight, float* dbias, const float* dout, const float* inp,
                   const float* weight, const float* mean, const float* rstd, int N, int C) {
  const bool center = mean != nullptr;
  // input gradient, row-parallel
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast<std::size_t>(N) * C, 1 << 14))
  for (int i = 0; i < N; ++i) {
    const float* x = inp + static_cast<std::size_t>(i) * C;
    const float* dy = dout + static_cast<std::size_t>(i) * C;
    float* dx = dinp_acc + static_cast<std::size_t>(i) * C;
    const float m = center ? mean[i] : 0.0f;
    const float s = rstd[i];
    double sum_g = 0.0, sum_gx = 0.0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
    for (int c = 0; c < C; ++c) {
      const float g = dy[c] * weight[c];
      sum_g += g;
      sum_gx += static_cast<double>(g) * ((x[c] - m) * s);
    }
    const float mean_g = center ? static_cast<float>(sum_g / C) : 0.0f;
    const float mean_gx = static_cast<float>(sum_gx / C);
#pragma omp simd
    for (int c = 0; c < C; ++c) dx[c] += norm_dx(dy[c] * weight[c], (x[c] - m) * s, s, mean_g, mean_gx);
  }
  // parameter gradients, column-block parallel, rows summed in order
  const int nt = threads_for(static_cast<std::size_t>(N) * C, 1 << 15);
#pragma omp parallel num_threads(nt)
  {
    std::size_t c0, c1;
    split_range(static_cast<std::size_t>(C), nt, omp_get_thread_num(), 16, &c0, &c1);
    for (int i = 0; i < N; ++i) {
      const float* x = inp + static_cast<std::size_t>(i) * C;
      const float* dy = dout + static_cast<std::size_t>(i) * C;
      const float m = center ? mean[i] : 0.0f;
      const float s = rstd[i];
#pragma omp simd
      for (std::size_t c = c0; c < c1; ++c) dweight[c] += dy[c] * ((x[c] - m) * s);
      if (dbias != nullptr) {
#pragma omp simd
        for (std::size_t c = c0; c < c1; ++c) dbias[c] += dy[c];
      }
    }
  }
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight,
                       const float* bias, int N, int C, float eps) {
  norm_forward(out, mean, rstd, inp, weight, bias, N, C, eps, true);
}

void layernorm_backward(float* dinp_acc, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C) {
  norm_backward(dinp_acc, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C, float eps) {
  norm_forward(out, nullptr, rstd, inp, weight, nullptr, N, C, eps, false);
}

void rmsnorm_backward(float* dinp_acc, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C) {
  norm_backward(dinp_acc, dweight, nullptr, dout, inp, weight, nullptr, rstd, N, C);
}

}  // namespace gptrain::cpu
