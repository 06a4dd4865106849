// Fused softmax + cross-entropy on CUDA, one block per row, never materialising probabilities.
// Stats: a single read of the row with an online (max, sumexp) per thread, merged across the block
// with xent_merge (kernels/xent/xent_math.h) in a fixed tree order (deterministic). Backward: one
// more read, writes dlogits (may alias logits: each element is read, then written, by one thread);
// vocab padding columns get 0, rows with dloss == 0 get all zeros (as the CPU twin).
#include <cmath>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/xent/xent.h"
#include "kernels/xent/xent_math.h"

namespace gptrain::cuda {

namespace {

constexpr int kBlock = 512;

__device__ __forceinline__ bool holds_target(int32_t target, int vocab_start, int V_valid_local) {
  return target >= vocab_start && target < vocab_start + V_valid_local;
}

template <typename T>
__global__ void xent_stats_kernel(float* row_max, float* row_sumexp, float* target_logit, const T* logits,
                                  const int32_t* targets, int V_local, int V_valid_local, int vocab_start) {
  __shared__ float sm_m[kBlock / 32], sm_s[kBlock / 32];
  const int r = blockIdx.x;
  const T* l = logits + std::size_t(r) * V_local;
  float m = -INFINITY, s = 0.0f;
  for (int c = threadIdx.x; c < V_valid_local; c += kBlock) {
    const float x = to_f32(l[c]);
    if (x > m) {
      s = s * expf(m - x) + 1.0f;  // expf(-inf) = 0 on the first element
      m = x;
    } else {
      s += expf(x - m);
    }
  }
  for (int o = 16; o > 0; o /= 2) {
    const float mo = __shfl_xor_sync(0xffffffffu, m, o);
    const float so = __shfl_xor_sync(0xffffffffu, s, o);
    xent_merge(&m, &s, mo, so);
  }
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) {
    sm_m[warp] = m;
    sm_s[warp] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float M = sm_m[0], S = sm_s[0];
    for (int w = 1; w < kBlock / 32; ++w) xent_merge(&M, &S, sm_m[w], sm_s[w]);
    row_max[r] = V_valid_local > 0 ? M : 0.0f;
    row_sumexp[r] = S;
    const int32_t tg = targets[r];
    target_logit[r] = holds_target(tg, vocab_start, V_valid_local) ? to_f32(l[tg - vocab_start]) : 0.0f;
  }
}

template <typename T>
__global__ void xent_backward_kernel(T* dlogits, const T* logits, const int32_t* targets, const float* row_max,
                                     const float* row_sumexp, const float* dloss, int V_local, int V_valid_local,
                                     int vocab_start) {
  const int r = blockIdx.x;
  const T* l = logits + std::size_t(r) * V_local;
  T* d = dlogits + std::size_t(r) * V_local;
  const float dl = dloss[r];
  if (dl == 0.0f) {
    for (int c = threadIdx.x; c < V_local; c += kBlock) d[c] = from_f32<T>(0.0f);
    return;
  }
  const float m = row_max[r], inv = 1.0f / row_sumexp[r];
  const int tcol = holds_target(targets[r], vocab_start, V_valid_local) ? targets[r] - vocab_start : -1;
  for (int c = threadIdx.x; c < V_local; c += kBlock)
    d[c] = from_f32<T>(c < V_valid_local ? xent_dlogit(to_f32(l[c]), m, inv, c == tcol, dl) : 0.0f);
}

__global__ void xent_loss_kernel(float* losses, const float* row_max, const float* row_sumexp,
                                 const float* target_logit, int N) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < N) losses[r] = xent_row_loss(row_max[r], row_sumexp[r], target_logit[r]);
}

}  // namespace

void xent_stats(cudaStream_t s, DType t, XentStats stats, const void* logits, const int32_t* targets, int N,
                int V_local, int V_valid_local, int vocab_start) {
  if (N == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    xent_stats_kernel<T><<<N, kBlock, 0, s>>>(stats.row_max, stats.row_sumexp, stats.target_logit,
                                              static_cast<const T*>(logits), targets, V_local, V_valid_local,
                                              vocab_start);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void xent_backward(cudaStream_t s, DType t, void* dlogits, const void* logits, const int32_t* targets,
                   const float* row_max, const float* row_sumexp, const float* dloss, int N, int V_local,
                   int V_valid_local, int vocab_start) {
  if (N == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    xent_backward_kernel<T><<<N, kBlock, 0, s>>>(static_cast<T*>(dlogits), static_cast<const T*>(logits), targets,
                                                 row_max, row_sumexp, dloss, V_local, V_valid_local, vocab_start);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void xent_loss(cudaStream_t s, float* losses, XentStats stats, int N) {
  if (N == 0) return;
  xent_loss_kernel<<<(N + 255) / 256, 256, 0, s>>>(losses, stats.row_max, stats.row_sumexp, stats.target_logit, N);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
