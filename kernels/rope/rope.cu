// RoPE on CUDA, in place on the Q and K heads of each qkv row (V untouched): one thread per
// (row, rotated head, pair), angles from kernels/rope/rope_math.h exactly as the CPU twin forms them
// (fp32 inverse frequency, fp32 scaled position * inv_freq, cosf/sinf times the YaRN concentration).
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/rope/rope.h"
#include "kernels/rope/rope_math.h"

namespace gptrain::cuda {

namespace {

template <typename T>
__global__ void rope_kernel(T* qkv, const int32_t* positions, int N, int rotated_heads, int row_len, int HS,
                            int rotary_dim, float base, bool interleaved, bool inverse, RopeScaling scaling) {
  const int half = rotary_dim / 2;
  const std::size_t total = std::size_t(N) * rotated_heads * half;
  for (std::size_t idx = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; idx < total;
       idx += std::size_t(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx % half);
    const std::size_t rh = idx / half;
    const int h = static_cast<int>(rh % rotated_heads);
    const std::size_t r = rh / rotated_heads;
    const float angle = rope_mul(rope_position(positions[r], scaling), rope_inv_freq(i, rotary_dim, base, scaling));
    const float m = rope_concentration(scaling);
    int d0, d1;
    rope_pair(i, rotary_dim, interleaved, &d0, &d1);
    T* head = qkv + r * row_len + std::size_t(h) * HS;
    float x0 = to_f32(head[d0]), x1 = to_f32(head[d1]);
    rope_rotate(&x0, &x1, rope_mul(cosf(angle), m), rope_mul(sinf(angle), m), inverse);
    head[d0] = from_f32<T>(x0);
    head[d1] = from_f32<T>(x1);
  }
}

}  // namespace

void rope(cudaStream_t s, DType t, void* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim,
          float base, bool interleaved, bool inverse, RopeScaling scaling) {
  const std::size_t total = std::size_t(N) * (NH + NKV) * (rotary_dim / 2);
  if (total == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    rope_kernel<T><<<grid_for(total, 256), 256, 0, s>>>(static_cast<T*>(qkv), positions, N, NH + NKV,
                                                        (NH + 2 * NKV) * HS, HS, rotary_dim, base, interleaved, inverse,
                                                        scaling);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
