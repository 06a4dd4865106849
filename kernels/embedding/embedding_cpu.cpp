// Embedding on CPU. Forward is a row gather. Backward is a scatter-add where tokens repeat, so threads
// split the channels C (each thread owns columns [c0, c1) of every row of dwte/dwpe and walks the
// tokens in order): no atomics, no per-thread copies, and the same summation order for any thread count.
#include "kernels/embedding/embedding.h"

#include <cstddef>

#include "kernels/common/cpu_parallel.h"

namespace gptrain::cpu {

void embedding_forward(float* out, const int32_t* tokens, const int32_t* positions, const float* wte, const float* wpe,
                       int N, int C, int vocab_start, int V_local, float scale) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * C, 1 << 15))
  for (int i = 0; i < N; ++i) {
    float* o = out + static_cast<std::size_t>(i) * C;
    const int local = tokens[i] - vocab_start;
    const float* w = (local >= 0 && local < V_local) ? wte + static_cast<std::size_t>(local) * C : nullptr;
    const float* p = wpe != nullptr ? wpe + static_cast<std::size_t>(positions[i]) * C : nullptr;
#pragma omp simd
    for (int c = 0; c < C; ++c) o[c] = ((w ? w[c] : 0.0f) + (p ? p[c] : 0.0f)) * scale;  // scale 1: exact
  }
}

void embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens, const int32_t* positions,
                        int N, int C, int vocab_start, int V_local, float scale) {
  const int nt = threads_for(static_cast<std::size_t>(N) * C, 1 << 15);
#pragma omp parallel num_threads(nt)
  {
    std::size_t c0, c1;
    split_range(static_cast<std::size_t>(C), nt, omp_get_thread_num(), 16, &c0, &c1);
    for (int i = 0; i < N; ++i) {
      const float* d = dout + static_cast<std::size_t>(i) * C;
      const int local = tokens[i] - vocab_start;
      if (local >= 0 && local < V_local) {
        float* w = dwte + static_cast<std::size_t>(local) * C;
#pragma omp simd
        for (std::size_t c = c0; c < c1; ++c) w[c] += scale * d[c];
      }
      if (dwpe != nullptr) {
        float* p = dwpe + static_cast<std::size_t>(positions[i]) * C;
#pragma omp simd
        for (std::size_t c = c0; c < c1; ++c) p[c] += scale * d[c];
      }
    }
  }
}

}  // namespace gptrain::cpu
