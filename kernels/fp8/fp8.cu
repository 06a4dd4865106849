// FP8 casts on the GPU. fp8_cast_transpose works on 32 x 32 tiles: each element is read once, its code
// written to out along rows and, through a shared-memory tile, to out_t along the transposed rows, so both
// stores are coalesced. amax: a warp-shuffle max per block, then one atomicMax on the float's bits (amax
// values are >= 0, whose IEEE bits order like the integers), so the result does not depend on block order.
// abs_max (fp8_gemm's output amax) reduces the same way over a grid-stride loop.
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/fp8/fp8.h"

namespace gptrain::cuda {

namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8;  // block = (32, 8): each thread handles 4 rows of the tile

template <typename T>
__global__ void fp8_cast_transpose_kernel(uint8_t* out, uint8_t* out_t, float* amax, const T* inp, const float* scale,
                                          int R, int C, Fp8Format fmt) {
  __shared__ uint8_t tile[kTile][kTile + 4];
  const float s = *scale;
  const int c0 = blockIdx.x * kTile, r0 = blockIdx.y * kTile;
  float m = 0.0f;
  for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
    const int r = r0 + i, c = c0 + threadIdx.x;
    if (r < R && c < C) {
      const float x = to_f32(inp[std::size_t(r) * C + c]);
      const uint8_t q = fp8_quantize(x, s, fmt);
      if (out) out[std::size_t(r) * C + c] = q;
      tile[i][threadIdx.x] = q;
      m = fmaxf(m, fabsf(x));
    }
  }
  if (out_t) {
    __syncthreads();
    for (int i = threadIdx.y; i < kTile; i += kRowsPerPass) {
      const int c = c0 + i, r = r0 + threadIdx.x;  // row c of out_t, column r
      if (r < R && c < C) out_t[std::size_t(c) * R + r] = tile[threadIdx.x][i];
    }
  }
  if (amax) {
    for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    __shared__ float warp_max[kRowsPerPass];
    if (threadIdx.x == 0) warp_max[threadIdx.y] = m;
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
      for (int w = 1; w < kRowsPerPass; ++w) m = fmaxf(m, warp_max[w]);
      atomicMax(reinterpret_cast<int*>(amax), __float_as_int(m));
    }
  }
}

template <typename T>
__global__ void fp8_dequantize_kernel(T* out, const uint8_t* inp, const float* scale_inv, std::size_t n,
                                      Fp8Format fmt) {
  const float si = *scale_inv;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = from_f32<T>(fp8_dequantize(inp[i], si, fmt));
}

// amax max= max |x|: per-thread grid-stride maxima, a warp-shuffle and shared-memory block max, one
// atomicMax per block on the float's bits (as above: order-independent).
template <typename T>
__global__ void abs_max_kernel(float* amax, const T* x, std::size_t n) {
  float m = 0.0f;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    m = fmaxf(m, fabsf(to_f32(x[i])));  // fmaxf drops a NaN operand
  for (int o = 16; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  __shared__ float warp_max[32];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) warp_max[warp] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < int(blockDim.x / 32); ++w) m = fmaxf(m, warp_max[w]);
    atomicMax(reinterpret_cast<int*>(amax), __float_as_int(m));
  }
}

}  // namespace

void abs_max(cudaStream_t s, DType t, float* amax, const void* x, std::size_t n) {
  if (n == 0) return;
  constexpr int kBlock = 256;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    abs_max_kernel<T><<<grid_for(n, kBlock, 1024), kBlock, 0, s>>>(amax, static_cast<const T*>(x), n);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

namespace {

template <typename T>
__global__ void add_row_bias_kernel(T* out, const T* bias, std::size_t n, int N) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = from_f32<T>(to_f32(out[i]) + to_f32(bias[i % std::size_t(N)]));
}

}  // namespace

void add_row_bias(cudaStream_t s, DType t, void* out, const void* bias, int M, int N) {
  const std::size_t n = std::size_t(M) * N;
  if (n == 0) return;
  constexpr int kBlock = 256;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    add_row_bias_kernel<T>
        <<<grid_for(n, kBlock, 4096), kBlock, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(bias), n, N);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void fp8_cast_transpose(cudaStream_t s, DType t, uint8_t* out, uint8_t* out_t, float* amax, const void* inp,
                        const float* scale, int R, int C, Fp8Kind kind) {
  if (R == 0 || C == 0) return;
  const dim3 grid((C + kTile - 1) / kTile, (R + kTile - 1) / kTile);
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    fp8_cast_transpose_kernel<T><<<grid, dim3(kTile, kRowsPerPass), 0, s>>>(
        out, out_t, amax, static_cast<const T*>(inp), scale, R, C, fp8_format_of(kind));
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void fp8_dequantize(cudaStream_t s, DType t, void* out, const uint8_t* inp, const float* scale_inv, std::size_t n,
                    Fp8Kind kind) {
  if (n == 0) return;
  constexpr int kBlock = 256;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    fp8_dequantize_kernel<T>
        <<<grid_for(n, kBlock), kBlock, 0, s>>>(static_cast<T*>(out), inp, scale_inv, n, fp8_format_of(kind));
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
