// Dropout on CUDA with the counter-based Philox RNG of kernels/dropout/philox.h: one thread per
// Philox block of 4 global indices (aligned to offset + i, as the CPU twin), so both twins draw the
// same numbers. Forward and backward are the same masked scaling; the mask is never stored.
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/dropout/dropout.h"
#include "kernels/dropout/philox.h"

namespace gptrain::cuda {

namespace {

constexpr int kBlock = 256;

template <typename T>
__global__ void dropout_kernel(T* out, const T* inp, std::size_t n, float p, float scale, uint64_t seed,
                               uint64_t offset, uint64_t first_block, uint64_t blocks) {
  for (uint64_t k = blockIdx.x * uint64_t(blockDim.x) + threadIdx.x; k < blocks;
       k += uint64_t(gridDim.x) * blockDim.x) {
    const uint64_t block = first_block + k;
    const Philox4 r = philox_block(seed, block);
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const uint64_t j = block * 4 + w;
      if (j < offset || j >= offset + n) continue;
      const std::size_t i = j - offset;
      out[i] = dropout_keep(philox_to_uniform(r.v[w]), p) ? from_f32<T>(to_f32(inp[i]) * scale) : from_f32<T>(0.0f);
    }
  }
}

void dropout_apply(cudaStream_t s, DType t, void* out, const void* inp, std::size_t n, float p, uint64_t seed,
                   uint64_t offset) {
  if (n == 0) return;
  if (p <= 0.0f) {
    if (out != inp) GPTRAIN_CUDA_CHECK(cudaMemcpyAsync(out, inp, n * dtype_size(t), cudaMemcpyDeviceToDevice, s));
    return;
  }
  const uint64_t first_block = offset >> 2;
  const uint64_t blocks = ((offset + n + 3) >> 2) - first_block;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    dropout_kernel<T><<<grid_for(blocks, kBlock), kBlock, 0, s>>>(
        static_cast<T*>(out), static_cast<const T*>(inp), n, p, dropout_scale(p), seed, offset, first_block, blocks);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void dropout_forward(cudaStream_t s, DType t, void* out, const void* inp, std::size_t n, float p, uint64_t seed,
                     uint64_t offset) {
  dropout_apply(s, t, out, inp, n, p, seed, offset);
}

void dropout_backward(cudaStream_t s, DType t, void* dinp, const void* dout, std::size_t n, float p, uint64_t seed,
                      uint64_t offset) {
  dropout_apply(s, t, dinp, dout, n, p, seed, offset);
}

}  // namespace gptrain::cuda
