// Dropout on CPU. Forward and backward are the same masked scaling (the mask is regenerated from
// (seed, offset + i), never stored). Work is split into Philox blocks of 4 indices aligned to the
// global index, so each Philox call serves four elements as on the GPU.
#include "kernels/dropout/dropout_cpu.h"

#include "kernels/common/cpu_parallel.h"
#include "kernels/dropout/philox.h"

namespace gptrain::cpu {

void dropout(float* out, const float* inp, std::size_t n, float p, uint64_t seed, uint64_t offset) {
  if (p <= 0.0f) {
    if (out != inp) {
      const long long m = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads_for(n, 1 << 15))
      for (long long i = 0; i < m; ++i) out[i] = inp[i];
    }
    return;
  }
  const float scale = dropout_scale(p);
  // Blocks of the global index space j = offset + i; block b covers j in [4b, 4b + 4).
  const uint64_t first_block = offset >> 2;
  const uint64_t last_block = (offset + n + 3) >> 2;  // exclusive
  const long long blocks = static_cast<long long>(last_block - first_block);
#pragma omp parallel for schedule(static) num_threads(threads_for(n, 1 << 13))
  for (long long k = 0; k < blocks; ++k) {
    const uint64_t block = first_block + static_cast<uint64_t>(k);
    const Philox4 r = philox_block(seed, block);
    for (int w = 0; w < 4; ++w) {
      const uint64_t j = block * 4 + static_cast<uint64_t>(w);
      if (j < offset || j >= offset + n) continue;
      const std::size_t i = static_cast<std::size_t>(j - offset);
      out[i] = dropout_keep(philox_to_uniform(r.v[w]), p) ? inp[i] * scale : 0.0f;
    }
  }
}

}  // namespace gptrain::cpu
