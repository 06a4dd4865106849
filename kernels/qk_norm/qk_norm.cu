// Per-head Q/K RMSNorm on CUDA (without weights: scale 1, --qk-l2-norm). Forward and the input gradient: one warp per
// (row, head), fp32 sums, each lane reading and then writing only its own elements of the head (in place is safe).
// Weight gradients: one block per (column, part), its threads striding over the part's (row, head) pairs and reducing
// in shared memory in a fixed order (deterministic, no atomics, no workspace); the launch reads d(output) before the
// input-gradient kernel overwrites it in place.
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/qk_norm/qk_norm.h"
#include "kernels/qk_norm/qk_norm_math.h"

namespace gptrain::cuda {

namespace {

constexpr int kHeadsPerBlock = 8;  // warps per block in the per-head kernels
constexpr int kParamThreads = 256;

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

template <typename T>
__global__ void qk_norm_forward_kernel(T* qkv, T* saved, float* rstd, const T* qw, const T* kw, int N, int NH, int NKV,
                                       int HS, float eps, bool zc) {
  const int heads = NH + NKV;
  const std::size_t pair = std::size_t(blockIdx.x) * kHeadsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (pair >= std::size_t(N) * heads) return;
  const std::size_t r = pair / heads;
  const int j = static_cast<int>(pair % heads);
  T* y = qkv + qk_norm_qkv_offset(r, j, NH, NKV, HS);
  T* x = saved + qk_norm_saved_offset(r, j, NH, NKV, HS);
  const T* w = j < NH ? qw : kw;
  float sq = 0.0f;
  for (int c = lane; c < HS; c += 32) {
    const float v = to_f32(y[c]);
    x[c] = y[c];
    sq += v * v;
  }
  const float s = norm_rstd(warp_sum(sq) / HS, eps);
  for (int c = lane; c < HS; c += 32)
    y[c] = from_f32<T>(w ? to_f32(x[c]) * s * norm_gamma(to_f32(w[c]), zc) : to_f32(x[c]) * s);
  if (lane == 0) rstd[pair] = s;
}

template <typename T>
__global__ void qk_norm_dinp_kernel(T* dqkv, const T* saved, const T* qw, const T* kw, const float* rstd, int N, int NH,
                                    int NKV, int HS, bool zc) {
  const int heads = NH + NKV;
  const std::size_t pair = std::size_t(blockIdx.x) * kHeadsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (pair >= std::size_t(N) * heads) return;
  const std::size_t r = pair / heads;
  const int j = static_cast<int>(pair % heads);
  T* d = dqkv + qk_norm_qkv_offset(r, j, NH, NKV, HS);
  const T* x = saved + qk_norm_saved_offset(r, j, NH, NKV, HS);
  const T* w = j < NH ? qw : kw;
  const float s = rstd[pair];
  auto g = [&](int c) { return w ? to_f32(d[c]) * norm_gamma(to_f32(w[c]), zc) : to_f32(d[c]); };
  float sum_gx = 0.0f;
  for (int c = lane; c < HS; c += 32) sum_gx += g(c) * (to_f32(x[c]) * s);
  const float mean_gx = warp_sum(sum_gx) / HS;
  for (int c = lane; c < HS; c += 32) d[c] = from_f32<T>(norm_dx(g(c), to_f32(x[c]) * s, s, 0.0f, mean_gx));
}

// Block (c, part): part 0 sums column c over the query heads of every row into dq_weight[c], part 1 over
// the key groups into dk_weight[c].
template <typename T>
__global__ void qk_norm_param_kernel(float* dqw, float* dkw, const T* dqkv, const T* saved, const float* rstd, int N,
                                     int NH, int NKV, int HS) {
  __shared__ float acc[kParamThreads];
  const int c = blockIdx.x;
  const bool q = blockIdx.y == 0;
  const int first = q ? 0 : NH, count = q ? NH : NKV, heads = NH + NKV;
  float a = 0.0f;
  for (std::size_t p = threadIdx.x; p < std::size_t(N) * count; p += kParamThreads) {
    const std::size_t r = p / count;
    const int j = first + static_cast<int>(p % count);
    const float x = to_f32(saved[qk_norm_saved_offset(r, j, NH, NKV, HS) + c]);
    a += to_f32(dqkv[qk_norm_qkv_offset(r, j, NH, NKV, HS) + c]) * (x * rstd[r * heads + j]);
  }
  acc[threadIdx.x] = a;
  __syncthreads();
  for (int half = kParamThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) acc[threadIdx.x] += acc[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) (q ? dqw : dkw)[c] += acc[0];
}

}  // namespace

void qk_norm_forward(cudaStream_t s, DType t, void* qkv, void* qk_saved, float* rstd, const void* q_weight,
                     const void* k_weight, int N, int NH, int NKV, int HS, float eps, bool zero_centered_gamma) {
  const std::size_t pairs = std::size_t(N) * (NH + NKV);
  if (pairs == 0) return;
  const unsigned blocks = static_cast<unsigned>((pairs + kHeadsPerBlock - 1) / kHeadsPerBlock);
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    qk_norm_forward_kernel<T><<<blocks, 32 * kHeadsPerBlock, 0, s>>>(
        static_cast<T*>(qkv), static_cast<T*>(qk_saved), rstd, static_cast<const T*>(q_weight),
        static_cast<const T*>(k_weight), N, NH, NKV, HS, eps, zero_centered_gamma);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void qk_norm_backward(cudaStream_t s, DType t, void* dqkv, float* dq_weight, float* dk_weight, const void* qk_saved,
                      const void* q_weight, const void* k_weight, const float* rstd, int N, int NH, int NKV, int HS,
                      bool zero_centered_gamma) {
  const std::size_t pairs = std::size_t(N) * (NH + NKV);
  if (pairs == 0) return;
  const unsigned blocks = static_cast<unsigned>((pairs + kHeadsPerBlock - 1) / kHeadsPerBlock);
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    // The weight gradients read d(output): before the input gradient replaces it (same stream, in order).
    if (dq_weight) {
      qk_norm_param_kernel<T><<<dim3(HS, 2), kParamThreads, 0, s>>>(
          dq_weight, dk_weight, static_cast<const T*>(dqkv), static_cast<const T*>(qk_saved), rstd, N, NH, NKV, HS);
      GPTRAIN_CUDA_CHECK_LAUNCH();
    }
    qk_norm_dinp_kernel<T><<<blocks, 32 * kHeadsPerBlock, 0, s>>>(
        static_cast<T*>(dqkv), static_cast<const T*>(qk_saved), static_cast<const T*>(q_weight),
        static_cast<const T*>(k_weight), rstd, N, NH, NKV, HS, zero_centered_gamma);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
