// Counter-based RNG for dropout (activations and attention probabilities): Philox4x32-10
// (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11). Counter-based means any
// element's random number is a pure function of (seed, index), so the backward regenerates the mask
// instead of storing it, and the CPU and CUDA twins agree bit for bit however they split the work.
//
// The exact mapping, which every backend implements through these functions:
//   j   = offset + i                              (uint64, wraps modulo 2^64)
//   key = { lo32(seed), hi32(seed) }
//   ctr = { lo32(j >> 2), hi32(j >> 2), 0, 0 }
//   r   = philox4x32_10(ctr, key)[j & 3]          (one Philox call serves 4 consecutive indices)
//   u   = (r >> 8) * 2^-24                        (a float in [0, 1) with 24 random bits; exact)
//   element i is kept iff u >= p; kept values are multiplied by 1 / (1 - p).
// Callers advance `offset` by the number of elements a call consumed so calls never share numbers.
#pragma once

#include <cstdint>

#include "kernels/common/hd.h"

namespace gptrain {

struct Philox4 {
  uint32_t v[4];
};

GPTRAIN_HD inline uint32_t philox_mulhi(uint32_t a, uint32_t b) {
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
}

// Philox4x32 with 10 rounds, Random123's round function and constants.
GPTRAIN_HD inline Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  const uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint32_t lo0 = M0 * c.v[0], hi0 = philox_mulhi(M0, c.v[0]);
    const uint32_t lo1 = M1 * c.v[2], hi1 = philox_mulhi(M1, c.v[2]);
    c = Philox4{{hi1 ^ c.v[1] ^ k0, lo1, hi0 ^ c.v[3] ^ k1, lo0}};
    k0 += W0;
    k1 += W1;
  }
  return c;
}

// The 4 uniforms of block j >> 2 (indices 4*(j>>2) .. 4*(j>>2)+3): kernels that handle 4 elements
// per thread call this once.
GPTRAIN_HD inline Philox4 philox_block(uint64_t seed, uint64_t block) {
  return philox4x32_10(Philox4{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0u, 0u}},
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

GPTRAIN_HD inline float philox_to_uniform(uint32_t r) { return static_cast<float>(r >> 8) * (1.0f / 16777216.0f); }

// The uniform in [0, 1) for global index j = offset + i.
GPTRAIN_HD inline float philox_uniform(uint64_t seed, uint64_t j) {
  const Philox4 r = philox_block(seed, j >> 2);
  return philox_to_uniform(r.v[j & 3]);
}

GPTRAIN_HD inline bool dropout_keep(float u, float p) { return u >= p; }

// Multiplier for kept elements; p == 0 keeps everything with scale exactly 1.
GPTRAIN_HD inline float dropout_scale(float p) { return p > 0.0f ? 1.0f / (1.0f - p) : 1.0f; }

}  // namespace gptrain
