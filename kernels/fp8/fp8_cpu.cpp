// FP8 casts on CPU: rows in parallel; the transpose written from the same pass (the CPU has no layout
// preference, the twin only has to produce the same bytes). amax is a max, so any order gives one result.
#include <cmath>
#include <cstddef>

#include "kernels/common/cpu_parallel.h"
#include "kernels/fp8/fp8.h"

namespace gptrain::cpu {

void fp8_cast_transpose(uint8_t* out, uint8_t* out_t, float* amax, const float* inp, const float* scale, int R, int C,
                        Fp8Kind kind) {
  const Fp8Format fmt = fp8_format_of(kind);
  const float s = *scale;
  float m = 0.0f;
#pragma omp parallel for schedule(static) reduction(max  \
                                                    : m) \
    num_threads(threads_for(static_cast <std::size_t>(R) * C, 1 << 15))
  for (int r = 0; r < R; ++r) {
    for (int c = 0; c < C; ++c) {
      const float x = inp[std::size_t(r) * C + c];
      const uint8_t q = fp8_quantize(x, s, fmt);
      if (out) out[std::size_t(r) * C + c] = q;
      if (out_t) out_t[std::size_t(c) * R + r] = q;
      m = std::fmax(m, std::fabs(x));  // fmax drops a NaN operand
    }
  }
  if (amax) *amax = std::fmax(*amax, m);
}

void fp8_dequantize(float* out, const uint8_t* inp, const float* scale_inv, std::size_t n, Fp8Kind kind) {
  const Fp8Format fmt = fp8_format_of(kind);
  const float si = *scale_inv;
#pragma omp parallel for schedule(static) num_threads(threads_for(n, 1 << 16))
  for (std::size_t i = 0; i < n; ++i) out[i] = fp8_dequantize(inp[i], si, fmt);
}

}  // namespace gptrain::cpu
