// Rotary position embedding maths shared by the twins. For pair i of the rotated part (i < rotary_dim/2):
//   inv_freq_i = 1 / base^(2i / rotary_dim)       (fp32, as Hugging Face computes it)
//   angle      = position * inv_freq_i            (fp32 product)
//   (x0, x1)  -> (x0 cos - x1 sin, x0 sin + x1 cos)   forward
//   (x0, x1)  -> (x0 cos + x1 sin, -x0 sin + x1 cos)  inverse = transpose = backward of forward
// Pair members: interleaved (GPT-J): dims (2i, 2i+1); half-split (NeoX, Llama): dims (i, i + rotary_dim/2).
// Dims >= rotary_dim pass through (partial rotary, --rotary-percent).
#pragma once

#include <cmath>

#include "kernels/common/hd.h"

namespace gptrain {

GPTRAIN_HD inline float rope_inv_freq(int i, int rotary_dim, float base) {
  return 1.0f / powf(base, static_cast<float>(2 * i) / static_cast<float>(rotary_dim));
}

// Indices of the two dims of pair i inside a head.
GPTRAIN_HD inline void rope_pair(int i, int rotary_dim, bool interleaved, int* d0, int* d1) {
  if (interleaved) {
    *d0 = 2 * i;
    *d1 = 2 * i + 1;
  } else {
    *d0 = i;
    *d1 = i + rotary_dim / 2;
  }
}

// Rotates (x0, x1) in place; inverse uses -sin.
GPTRAIN_HD inline void rope_rotate(float* x0, float* x1, float cos_a, float sin_a, bool inverse) {
  const float s = inverse ? -sin_a : sin_a;
  const float a = *x0, b = *x1;
  *x0 = a * cos_a - b * s;
  *x1 = a * s + b * cos_a;
}

}  // namespace gptrain
