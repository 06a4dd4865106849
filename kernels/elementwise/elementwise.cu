// Elementwise CUDA kernels: dtype conversion, residual add, fp32 scale, and the fp64 sum of squares
// for the global gradient norm. The sum of squares is deterministic: each block reduces a fixed
// slice in a fixed tree order, then one block adds the block partials in index order.
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/workspace.h"
#include "kernels/elementwise/elementwise.h"

namespace gptrain::cuda {

namespace {

constexpr int kBlock = 256;

template <typename TD, typename TS>
__global__ void convert_kernel(TD* dst, const TS* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = from_f32<TD>(to_f32(src[i]));
}

template <typename T>
__global__ void add_kernel(T* out, const T* a, const T* b, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    out[i] = from_f32<T>(to_f32(a[i]) + to_f32(b[i]));
}

__global__ void scale_kernel(float* x, float s, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    x[i] *= s;
}

// Block tree reduction of one double per thread; the result is valid in thread 0.
__device__ double block_sum(double v) {
  __shared__ double part[kBlock / 32];
  for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kBlock / 32 ? part[lane] : 0.0;
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

// Block b sums x[b*chunk, (b+1)*chunk) (fixed slices: the grid size does not change the result).
__global__ void sum_squares_partial(double* partial, const float* x, std::size_t n, std::size_t chunk) {
  const std::size_t begin = blockIdx.x * chunk;
  const std::size_t end = begin + chunk < n ? begin + chunk : n;
  double acc = 0.0;
  for (std::size_t i = begin + threadIdx.x; i < end; i += kBlock) {
    const double v = x[i];
    acc += v * v;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

__global__ void sum_partials(double* out, const double* partial, int count) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < count; i += kBlock) acc += partial[i];
  acc = block_sum(acc);
  if (threadIdx.x == 0) *out = acc;
}

}  // namespace

void convert(cudaStream_t s, void* dst, DType dst_t, const void* src, DType src_t, std::size_t n) {
  if (n == 0) return;
  dispatch_dtype(dst_t, [&](auto dtag) {
    using TD = decltype(dtag);
    dispatch_dtype(src_t, [&](auto stag) {
      using TS = decltype(stag);
      convert_kernel<TD, TS>
          <<<grid_for(n, kBlock), kBlock, 0, s>>>(static_cast<TD*>(dst), static_cast<const TS*>(src), n);
    });
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void add(cudaStream_t s, DType t, void* out, const void* a, const void* b, std::size_t n) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    add_kernel<T><<<grid_for(n, kBlock), kBlock, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(a),
                                                         static_cast<const T*>(b), n);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void scale_f32(cudaStream_t s, float* x, float scale, std::size_t n) {
  if (n == 0) return;
  scale_kernel<<<grid_for(n, kBlock), kBlock, 0, s>>>(x, scale, n);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

double sum_squares(cudaStream_t s, Workspace& ws, const float* x, std::size_t n) {
  if (n == 0) return 0.0;
  const std::size_t blocks = ceil_div(n, kSumSquaresChunk);  // one per chunk of elements
  Carver c(ws.get(sum_squares_scratch_bytes(n)));
  double* partial = c.take<double>(blocks);
  double* total = c.take<double>(1);
  sum_squares_partial<<<static_cast<unsigned>(blocks), kBlock, 0, s>>>(partial, x, n, kSumSquaresChunk);
  GPTRAIN_CUDA_CHECK_LAUNCH();
  sum_partials<<<1, kBlock, 0, s>>>(total, partial, static_cast<int>(blocks));
  GPTRAIN_CUDA_CHECK_LAUNCH();
  double result = 0.0;
  GPTRAIN_CUDA_CHECK(cudaMemcpyAsync(&result, total, sizeof(double), cudaMemcpyDeviceToHost, s));
  GPTRAIN_CUDA_CHECK(cudaStreamSynchronize(s));
  return result;
}

}  // namespace gptrain::cuda
