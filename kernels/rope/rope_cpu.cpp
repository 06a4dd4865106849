// RoPE on CPU, in place on the Q and K heads of each qkv row (V untouched). Rows are independent;
// each row computes its rotary_dim/2 angles once and applies them to all NH + NKV rotated heads.
#include "kernels/rope/rope.h"

#include <cmath>
#include <cstddef>
#include <vector>

#include "kernels/common/cpu_parallel.h"
#include "kernels/rope/rope_math.h"

namespace gptrain::cpu {

void rope(float* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim, float base,
          bool interleaved, bool inverse, RopeScaling scaling) {
  const int half = rotary_dim / 2;
  std::vector<float> inv_freq(static_cast<std::size_t>(half));
  for (int i = 0; i < half; ++i) inv_freq[static_cast<std::size_t>(i)] = rope_inv_freq(i, rotary_dim, base, scaling);
  const float m = rope_concentration(scaling);  // 1 unless YaRN: then an exact multiply by 1 elsewhere
  const std::size_t row = static_cast<std::size_t>(NH + 2 * NKV) * HS;
  const int rotated_heads = NH + NKV;  // Q heads then K heads, contiguous at the start of the row
#pragma omp parallel num_threads(threads_for(static_cast <std::size_t>(N) * row, 1 << 14))
  {
    std::vector<float> cs(static_cast<std::size_t>(half)), sn(static_cast<std::size_t>(half));
#pragma omp for schedule(static)
    for (int r = 0; r < N; ++r) {
      const float pos = rope_position(positions[r], scaling);
      for (int i = 0; i < half; ++i) {
        const float angle = pos * inv_freq[static_cast<std::size_t>(i)];
        cs[static_cast<std::size_t>(i)] = rope_mul(cosf(angle), m);
        sn[static_cast<std::size_t>(i)] = rope_mul(sinf(angle), m);
      }
      float* x = qkv + static_cast<std::size_t>(r) * row;
      for (int h = 0; h < rotated_heads; ++h) {
        float* head = x + static_cast<std::size_t>(h) * HS;
        for (int i = 0; i < half; ++i) {
          int d0, d1;
          rope_pair(i, rotary_dim, interleaved, &d0, &d1);
          rope_rotate(&head[d0], &head[d1], cs[static_cast<std::size_t>(i)], sn[static_cast<std::size_t>(i)], inverse);
        }
      }
    }
  }
}

}  // namespace gptrain::cpu
