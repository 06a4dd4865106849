// Bias gradient of the linear layer: dbias (OC) += column sums of dout (N, OC). Deterministic
// without atomics: fixed (32-column x 128-row) tiles reduce into fp32 partials, then one thread per
// column adds them in tile order. The GEMMs themselves are cuBLASLt (matmul_cublaslt_cuda.cpp).
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/workspace.h"
#include "kernels/matmul/matmul.h"

namespace gptrain::cuda {

namespace {

template <typename T>
__global__ void column_sum_partial_kernel(float* partial, const T* x, int N, int C) {
  __shared__ float sm[8][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  const int r0 = blockIdx.y * kBiasGradTileRows;
  const int r1 = min(r0 + kBiasGradTileRows, N);
  float acc = 0.0f;
  if (c < C)
    for (int r = r0 + threadIdx.y; r < r1; r += 8) acc += to_f32(x[std::size_t(r) * C + c]);
  sm[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float v = 0.0f;
    for (int y = 0; y < 8; ++y) v += sm[y][threadIdx.x];
    partial[std::size_t(blockIdx.y) * C + c] = v;
  }
}

__global__ void add_partials_kernel(float* dst, const float* partial, int tiles, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float acc = 0.0f;
  for (int t = 0; t < tiles; ++t) acc += partial[std::size_t(t) * C + c];
  dst[c] += acc;
}

}  // namespace

void bias_grad(cudaStream_t s, DType t, Workspace& ws, float* dbias, const void* dout, int N, int OC) {
  if (N == 0 || OC == 0) return;
  const int tiles = static_cast<int>(ceil_div(N, kBiasGradTileRows));
  float* partial = static_cast<float*>(ws.get(bias_grad_scratch_bytes(N, OC)));
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    column_sum_partial_kernel<T>
        <<<dim3((OC + 31) / 32, tiles), dim3(32, 8), 0, s>>>(partial, static_cast<const T*>(dout), N, OC);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
  add_partials_kernel<<<(OC + 255) / 256, 256, 0, s>>>(dbias, partial, tiles, OC);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
