// GELU and SwiGLU on CPU: flat OpenMP loops over the shared per-element functions, with the
// exponential supplied by exp_simd so the loops vectorise (the erf form still calls erff). In-place calls
// (out == inp, dinp == dout) are safe because each element is read before it is written.
#include "kernels/gelu/gelu_cpu.h"

#include "kernels/common/cpu_exp.h"
#include "kernels/common/cpu_parallel.h"
#include "kernels/gelu/gelu_math.h"

namespace gptrain::cpu {

constexpr std::size_t kGrain = 1 << 14;

void gelu_forward(float* out, const float* inp, std::size_t n, GeluKind kind) {
  const long long m = static_cast<long long>(n);
  if (kind == GeluKind::Tanh) {
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, kGrain))
    for (long long i = 0; i < m; ++i) out[i] = gelu_tanh_from_exp(inp[i], exp_simd(gelu_tanh_exp_arg(inp[i])));
  } else {
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, kGrain))
    for (long long i = 0; i < m; ++i) out[i] = gelu_erf(inp[i]);
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n, GeluKind kind) {
  const long long m = static_cast<long long>(n);
  if (kind == GeluKind::Tanh) {
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, kGrain))
    for (long long i = 0; i < m; ++i) {
      dinp[i] = gelu_tanh_grad_from_exp(inp[i], exp_simd(gelu_tanh_exp_arg(inp[i]))) * dout[i];
    }
  } else {
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, kGrain))
    for (long long i = 0; i < m; ++i) dinp[i] = gelu_erf_grad(inp[i]) * dout[i];
  }
}

void swiglu_forward(float* out, const float* inp, int N, int F) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast<std::size_t>(N) * F, kGrain))
  for (int r = 0; r < N; ++r) {
    const float* gate = inp + static_cast<std::size_t>(r) * 2 * F;
    const float* up = gate + F;
    float* o = out + static_cast<std::size_t>(r) * F;
#pragma omp simd
    for (int j = 0; j < F; ++j) o[j] = swiglu_from_exp(gate[j], up[j], exp_simd(-gate[j]));
  }
}

void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast<std::size_t>(N) * F, kGrain))
  for (int r = 0; r < N; ++r) {
    const float* gate = inp + static_cast<std::size_t>(r) * 2 * F;
    const float* up = gate + F;
    const float* d = dout + static_cast<std::size_t>(r) * F;
    float* dg = dinp + static_cast<std::size_t>(r) * 2 * F;
    float* du = dg + F;
#pragma omp simd
    for (int j = 0; j < F; ++j) swiglu_grad_from_exp(gate[j], up[j], d[j], exp_simd(-gate[j]), &dg[j], &du[j]);
  }
}

}  // namespace gptrain::cpu
