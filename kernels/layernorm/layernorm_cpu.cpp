// LayerNorm / RMSNorm on CPU. Rows are independent, so forward and the input gradient run row-parallel
// with the per-row sums in double (C is at most a few thousand: cheap, and removes any doubt about
// cancellation). The weight/bias gradients are column sums over all rows: a second pass split by
// column blocks, each thread recomputing xhat for its columns, keeps them deterministic.
// RMSNorm is LayerNorm with mean fixed at 0 and no bias, so both share one implementation.
// zc (zero-centred gamma): the weight stores gamma - 1 (layernorm_math.h: norm_gamma).
// The residual-fused forward adds the two residual inputs row by row and normalizes the row while it
// is cache-hot, through the same per-row code as the plain forward (same bits as add + norm).
#include "kernels/layernorm/layernorm.h"

#include <cmath>
#include <cstddef>

#include "kernels/common/cpu_parallel.h"
#include "kernels/layernorm/layernorm_math.h"

namespace gptrain::cpu {
namespace {

// One row: statistics in double, output in fp32. Shared by the plain and the residual-fused forward,
// so both give the same bits.
inline void norm_row(float* y, float* mean_out, float* rstd_out, const float* x, const float* weight, const float* bias,
                     int C, float eps, bool center, bool zc) {
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
    for (int c = 0; c < C; ++c) y[c] = (x[c] - m) * s * norm_gamma(weight[c], zc) + bias[c];
  } else {
#pragma omp simd
    for (int c = 0; c < C; ++c) y[c] = (x[c] - m) * s * norm_gamma(weight[c], zc);
  }
  if (mean_out != nullptr) *mean_out = m;
  *rstd_out = s;
}

void norm_forward(float* out, float* mean_out, float* rstd_out, const float* inp, const float* weight,
                  const float* bias, int N, int C, float eps, bool center, bool zc) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * C, 1 << 14))
  for (int i = 0; i < N; ++i) {
    const std::size_t r = static_cast<std::size_t>(i) * C;
    norm_row(out + r, mean_out ? mean_out + i : nullptr, rstd_out + i, inp + r, weight, bias, C, eps, center, zc);
  }
}

// residual = a + b row by row, then the norm of that row while it is still in L1: one sweep over
// memory instead of add() + norm_forward(). In-place (residual == a or b) is safe: each element is
// read before it is written.
void residual_norm_forward(float* residual, float* out, float* mean_out, float* rstd_out, const float* a,
                           const float* b, const float* weight, const float* bias, int N, int C, float eps, bool center,
                           bool zc) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * C, 1 << 14))
  for (int i = 0; i < N; ++i) {
    const std::size_t r = static_cast<std::size_t>(i) * C;
    float* x = residual + r;
    const float* ar = a + r;
    const float* br = b + r;
#pragma omp simd
    for (int c = 0; c < C; ++c) x[c] = ar[c] + br[c];
    norm_row(out + r, mean_out ? mean_out + i : nullptr, rstd_out + i, x, weight, bias, C, eps, center, zc);
  }
}

void norm_backward(float* dinp_acc, float* dweight, float* dbias, const float* dout, const float* inp,
                   const float* weight, const float* mean, const float* rstd, int N, int C, bool zc) {
  const bool center = mean != nullptr;
  // input gradient, row-parallel
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * C, 1 << 14))
  for (int i = 0; i < N; ++i) {
    const float* x = inp + static_cast<std::size_t>(i) * C;
    const float* dy = dout + static_cast<std::size_t>(i) * C;
    float* dx = dinp_acc + static_cast<std::size_t>(i) * C;
    const float m = center ? mean[i] : 0.0f;
    const float s = rstd[i];
    double sum_g = 0.0, sum_gx = 0.0;
#pragma omp simd reduction(+ : sum_g, sum_gx)
    for (int c = 0; c < C; ++c) {
      const float g = dy[c] * norm_gamma(weight[c], zc);
      sum_g += g;
      sum_gx += static_cast<double>(g) * ((x[c] - m) * s);
    }
    const float mean_g = center ? static_cast<float>(sum_g / C) : 0.0f;
    const float mean_gx = static_cast<float>(sum_gx / C);
#pragma omp simd
    for (int c = 0; c < C; ++c) dx[c] += norm_dx(dy[c] * norm_gamma(weight[c], zc), (x[c] - m) * s, s, mean_g, mean_gx);
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

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* weight, const float* bias,
                       int N, int C, float eps, bool zero_centered_gamma) {
  norm_forward(out, mean, rstd, inp, weight, bias, N, C, eps, true, zero_centered_gamma);
}

void layernorm_backward(float* dinp_acc, float* dweight, float* dbias, const float* dout, const float* inp,
                        const float* weight, const float* mean, const float* rstd, int N, int C,
                        bool zero_centered_gamma) {
  norm_backward(dinp_acc, dweight, dbias, dout, inp, weight, mean, rstd, N, C, zero_centered_gamma);
}

void rmsnorm_forward(float* out, float* rstd, const float* inp, const float* weight, int N, int C, float eps,
                     bool zero_centered_gamma) {
  norm_forward(out, nullptr, rstd, inp, weight, nullptr, N, C, eps, false, zero_centered_gamma);
}

void rmsnorm_backward(float* dinp_acc, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int N, int C, bool zero_centered_gamma) {
  norm_backward(dinp_acc, dweight, nullptr, dout, inp, weight, nullptr, rstd, N, C, zero_centered_gamma);
}

void residual_layernorm_forward(float* residual_out, float* norm_out, float* mean, float* rstd, const float* a,
                                const float* b, const float* weight, const float* bias, int N, int C, float eps,
                                bool zero_centered_gamma) {
  residual_norm_forward(residual_out, norm_out, mean, rstd, a, b, weight, bias, N, C, eps, true, zero_centered_gamma);
}

void residual_rmsnorm_forward(float* residual_out, float* norm_out, float* rstd, const float* a, const float* b,
                              const float* weight, int N, int C, float eps, bool zero_centered_gamma) {
  residual_norm_forward(residual_out, norm_out, nullptr, rstd, a, b, weight, nullptr, N, C, eps, false,
                        zero_centered_gamma);
}

}  // namespace gptrain::cpu
