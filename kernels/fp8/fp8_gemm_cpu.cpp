// The FP8 GEMM on CPU, in the order cuBLASLt computes it: the codes decode exactly to fp32 (no scale yet;
// every product of two FP8 values is exact in fp32), one fp32 GEMM through OpenBLAS sums them, and
// alpha * a_scale_inv * b_scale_inv scales the sum, as the GPU scales its fp32 accumulator. The CPU has
// one accumulation mode, so fast_accum changes nothing here. A bias is added to every row after the GEMM.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels/common/cpu_parallel.h"
#include "kernels/fp8/fp8.h"
#include "kernels/matmul/matmul.h"

namespace gptrain::cpu {

namespace {

std::vector<float> decode(const uint8_t* codes, std::size_t n, Fp8Kind kind) {
  const Fp8Format fmt = fp8_format_of(kind);
  std::vector<float> v(n);
#pragma omp parallel for schedule(static) num_threads(threads_for(n, 1 << 16))
  for (std::size_t i = 0; i < n; ++i) v[i] = fp8_to_f32(codes[i], fmt);
  return v;
}

}  // namespace

void fp8_gemm(float* out, bool /*out_fp32*/, const uint8_t* a, Fp8Kind a_kind, const float* a_scale_inv,
              const uint8_t* b, Fp8Kind b_kind, const float* b_scale_inv, int M, int N, int K, float alpha,
              bool accumulate, float* amax, bool /*fast_accum*/, const float* bias) {
  if (M == 0 || N == 0) return;
  const std::size_t mn = static_cast<std::size_t>(M) * N;
  if (K == 0) {
    if (!accumulate) std::fill(out, out + mn, 0.0f);
  } else {
    const std::vector<float> fa = decode(a, static_cast<std::size_t>(M) * K, a_kind);
    const std::vector<float> fb = decode(b, static_cast<std::size_t>(N) * K, b_kind);
    const float scale = alpha * *a_scale_inv * *b_scale_inv;
    sgemm(false, true, M, N, K, scale, fa.data(), K, fb.data(), K, accumulate ? 1.0f : 0.0f, out, N);
  }
  if (bias != nullptr) {
#pragma omp parallel for schedule(static) num_threads(threads_for(mn, 1 << 16))
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < N; ++j) out[std::size_t(i) * N + j] += bias[j];
  }
  if (amax == nullptr) return;
  float m = 0.0f;
#pragma omp parallel for schedule(static) reduction(max : m) num_threads(threads_for(mn, 1 << 16))
  for (std::size_t i = 0; i < mn; ++i) m = std::fmax(m, std::fabs(out[i]));  // fmax drops a NaN operand
  *amax = std::fmax(*amax, m);
}

}  // namespace gptrain::cpu
