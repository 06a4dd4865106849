// Dropout with a counter-based RNG (kernels/backend.h, dropout_forward/backward): element i of the call
// (seed, offset) is kept iff philox_uniform(seed, offset + i) >= p, kept values are scaled by 1/(1-p).
// Design: the mask is never stored; the backward regenerates it from (seed, offset), and both twins
// draw the same Philox numbers for the same global index (philox.h), so CPU and GPU drop the same
// elements. Attention dropout uses the same mapping on the probability rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"

namespace gptrain::cpu {

// out = inp * keep / (1 - p), keep_i = philox_uniform(seed, offset + i) >= p. Backward: same with dout.
void dropout(float* out, const float* inp, std::size_t n, float p, uint64_t seed, uint64_t offset);
// The two ops' twins: the backward regenerates the forward's mask, so both are dropout() itself.
inline void dropout_forward(float* out, const float* inp, std::size_t n, float p, uint64_t seed, uint64_t offset) {
  dropout(out, inp, n, p, seed, offset);
}
inline void dropout_backward(float* dinp, const float* dout, std::size_t n, float p, uint64_t seed, uint64_t offset) {
  dropout(dinp, dout, n, p, seed, offset);
}

// mult[i] = (philox_uniform(seed, j0 + i) >= p ? scale : 0) for i < count: the mask of n consecutive
// indices as multipliers (used by attention dropout on probability rows).
void dropout_multipliers(float* mult, std::size_t count, uint64_t seed, uint64_t j0, float p, float scale);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// dropout.cu: one thread per Philox block of 4 global indices.
void dropout_forward(cudaStream_t s, DType t, void* out, const void* inp, std::size_t n, float p, uint64_t seed,
                     uint64_t offset);
void dropout_backward(cudaStream_t s, DType t, void* dinp, const void* dout, std::size_t n, float p, uint64_t seed,
                      uint64_t offset);

}  // namespace gptrain::cuda
