// GELU, SwiGLU and GeGLU on CPU: OpenMP over chunks, each chunk a vectorised loop over the shared per-element
// functions with exp and erf supplied by the vectorisable exp_simd / erf_simd of kernels/common/cpu_exp.h.
// In-place calls (out == inp, dinp == dout) are safe: each element is read before it is written.
#include "kernels/gelu/gelu.h"

#include <algorithm>

#include "kernels/common/cpu_exp.h"
#include "kernels/common/cpu_parallel.h"
#include "kernels/gelu/gelu_math.h"

namespace gptrain::cpu {

constexpr std::size_t kGeluChunk = 4096;

GPTRAIN_CPU_CLONES void gelu_chunk(float* out, const float* inp, std::size_t n, GeluKind kind) {
  if (kind == GeluKind::Tanh) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) out[i] = gelu_tanh_from_exp(inp[i], exp_simd(gelu_tanh_exp_arg(inp[i])));
  } else {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) out[i] = gelu_erf_from(inp[i], erf_simd(inp[i] * kInvSqrt2));
  }
}

GPTRAIN_CPU_CLONES void gelu_grad_chunk(float* dinp, const float* inp, const float* dout, std::size_t n,
                                        GeluKind kind) {
  if (kind == GeluKind::Tanh) {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) {
      dinp[i] = gelu_tanh_grad_from_exp(inp[i], exp_simd(gelu_tanh_exp_arg(inp[i]))) * dout[i];
    }
  } else {
#pragma omp simd
    for (std::size_t i = 0; i < n; ++i) {
      const float x = inp[i];
      dinp[i] = gelu_erf_grad_from(x, erf_simd(x * kInvSqrt2), exp_simd(-0.5f * x * x)) * dout[i];
    }
  }
}

GPTRAIN_CPU_CLONES void swiglu_row(float* out, const float* gate, const float* up, int F) {
#pragma omp simd
  for (int j = 0; j < F; ++j) out[j] = swiglu_from_exp(gate[j], up[j], exp_simd(-gate[j]));
}

GPTRAIN_CPU_CLONES void swiglu_grad_row(float* dg, float* du, const float* gate, const float* up, const float* d,
                                        int F) {
#pragma omp simd
  for (int j = 0; j < F; ++j) swiglu_grad_from_exp(gate[j], up[j], d[j], exp_simd(-gate[j]), &dg[j], &du[j]);
}

// GeGLU rows: the GELU of each gate element, then its product with the up element (and the grads).
GPTRAIN_CPU_CLONES void geglu_row(float* out, const float* gate, const float* up, int F, GeluKind kind) {
  if (kind == GeluKind::Tanh) {
#pragma omp simd
    for (int j = 0; j < F; ++j)
      out[j] = geglu_from(gelu_tanh_from_exp(gate[j], exp_simd(gelu_tanh_exp_arg(gate[j]))), up[j]);
  } else {
#pragma omp simd
    for (int j = 0; j < F; ++j) out[j] = geglu_from(gelu_erf_from(gate[j], erf_simd(gate[j] * kInvSqrt2)), up[j]);
  }
}

GPTRAIN_CPU_CLONES void geglu_grad_row(float* dg, float* du, const float* gate, const float* up, const float* d, int F,
                                       GeluKind kind) {
  if (kind == GeluKind::Tanh) {
#pragma omp simd
    for (int j = 0; j < F; ++j) {
      const float e = exp_simd(gelu_tanh_exp_arg(gate[j]));
      geglu_grad_from(gelu_tanh_from_exp(gate[j], e), gelu_tanh_grad_from_exp(gate[j], e), up[j], d[j], &dg[j], &du[j]);
    }
  } else {
#pragma omp simd
    for (int j = 0; j < F; ++j) {
      const float x = gate[j], erf_x = erf_simd(x * kInvSqrt2);
      geglu_grad_from(gelu_erf_from(x, erf_x), gelu_erf_grad_from(x, erf_x, exp_simd(-0.5f * x * x)), up[j], d[j],
                      &dg[j], &du[j]);
    }
  }
}

void gelu_forward(float* out, const float* inp, std::size_t n, GeluKind kind) {
  const long long chunks = static_cast<long long>((n + kGeluChunk - 1) / kGeluChunk);
#pragma omp parallel for schedule(static) num_threads(threads_for(n, 4 * kGeluChunk))
  for (long long k = 0; k < chunks; ++k) {
    const std::size_t b = static_cast<std::size_t>(k) * kGeluChunk;
    gelu_chunk(out + b, inp + b, std::min(kGeluChunk, n - b), kind);
  }
}

void gelu_backward(float* dinp, const float* inp, const float* dout, std::size_t n, GeluKind kind) {
  const long long chunks = static_cast<long long>((n + kGeluChunk - 1) / kGeluChunk);
#pragma omp parallel for schedule(static) num_threads(threads_for(n, 4 * kGeluChunk))
  for (long long k = 0; k < chunks; ++k) {
    const std::size_t b = static_cast<std::size_t>(k) * kGeluChunk;
    gelu_grad_chunk(dinp + b, inp + b, dout + b, std::min(kGeluChunk, n - b), kind);
  }
}

void swiglu_forward(float* out, const float* inp, int N, int F) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * F, 4 * kGeluChunk))
  for (int r = 0; r < N; ++r) {
    const float* gate = inp + static_cast<std::size_t>(r) * 2 * F;
    swiglu_row(out + static_cast<std::size_t>(r) * F, gate, gate + F, F);
  }
}

void swiglu_backward(float* dinp, const float* inp, const float* dout, int N, int F) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * F, 4 * kGeluChunk))
  for (int r = 0; r < N; ++r) {
    const float* gate = inp + static_cast<std::size_t>(r) * 2 * F;
    float* dg = dinp + static_cast<std::size_t>(r) * 2 * F;
    swiglu_grad_row(dg, dg + F, gate, gate + F, dout + static_cast<std::size_t>(r) * F, F);
  }
}

void geglu_forward(float* out, const float* inp, int N, int F, GeluKind kind) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * F, 4 * kGeluChunk))
  for (int r = 0; r < N; ++r) {
    const float* gate = inp + static_cast<std::size_t>(r) * 2 * F;
    geglu_row(out + static_cast<std::size_t>(r) * F, gate, gate + F, F, kind);
  }
}

void geglu_backward(float* dinp, const float* inp, const float* dout, int N, int F, GeluKind kind) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * F, 4 * kGeluChunk))
  for (int r = 0; r < N; ++r) {
    const float* gate = inp + static_cast<std::size_t>(r) * 2 * F;
    float* dg = dinp + static_cast<std::size_t>(r) * 2 * F;
    geglu_grad_row(dg, dg + F, gate, gate + F, dout + static_cast<std::size_t>(r) * F, F, kind);
  }
}

}  // namespace gptrain::cpu
