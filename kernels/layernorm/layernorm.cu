// LayerNorm and RMSNorm on CUDA (RMSNorm = LayerNorm with mean 0 and no bias, as in the CPU twin).
// Forward and the input gradient: one warp per row, fp32 row sums, two passes (mean, then squared
// deviations) as kernels/layernorm/layernorm_math.h prescribes. Weight/bias gradients: column sums
// over all rows, deterministic without atomics: blocks sum fixed (32-column x 128-row) tiles into
// fp32 partials, then one thread per column adds the partials in tile order.
// The residual-fused forward (residual_*_forward) is the same kernel with the residual add folded into
// its first pass over the row: one launch and one fewer round trip of the residual stream through memory.
// zc (zero-centred gamma): the weight stores gamma - 1, turned into gamma in fp32 as it is read
// (layernorm_math.h: norm_gamma); the parameter-gradient kernels do not read the weight.
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/workspace.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/layernorm/layernorm_math.h"

namespace gptrain::cuda {

namespace {

constexpr int kRowsPerBlock = 8;  // warps per block in the row kernels

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// kResidual: the row is x = round(a + b), stored to residual_out as add() would, and the statistics and
// the output read it back from there. Each lane reads back only the elements it wrote itself, so
// program order makes the stores visible (the row is L1/L2-hot); residual_out may alias a or b because
// every element is read before the same lane writes it. The summation order is the plain kernel's, so
// the fused forward gives the same bits as add() + the plain forward.
template <typename T, bool kResidual>
__global__ void norm_forward_kernel(T* out, float* mean_out, float* rstd_out, const T* inp, const T* inp_b,
                                    T* residual_out, const T* weight, const T* bias, int N, int C, float eps,
                                    bool center, bool zc) {
  const int row = blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const T* x = inp + std::size_t(row) * C;
  T* y = out + std::size_t(row) * C;
  float sum = 0.0f;
  if constexpr (kResidual) {
    const T* b = inp_b + std::size_t(row) * C;
    T* r = residual_out + std::size_t(row) * C;
    for (int c = lane; c < C; c += 32) {
      const T v = from_f32<T>(to_f32(x[c]) + to_f32(b[c]));
      r[c] = v;
      sum += to_f32(v);
    }
    x = r;
  } else {
    if (center)
      for (int c = lane; c < C; c += 32) sum += to_f32(x[c]);
  }
  const float m = center ? warp_sum(sum) / C : 0.0f;
  float sq = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float d = to_f32(x[c]) - m;
    sq += d * d;
  }
  const float s = norm_rstd(warp_sum(sq) / C, eps);
  for (int c = lane; c < C; c += 32) {
    float v = (to_f32(x[c]) - m) * s * norm_gamma(to_f32(weight[c]), zc);
    if (bias) v += to_f32(bias[c]);
    y[c] = from_f32<T>(v);
  }
  if (lane == 0) {
    if (mean_out) mean_out[row] = m;
    rstd_out[row] = s;
  }
}

template <typename T>
__global__ void norm_dinp_kernel(T* dinp_acc, const T* dout, const T* inp, const T* weight, const float* mean,
                                 const float* rstd, int N, int C, bool zc) {
  const int row = blockIdx.x * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= N) return;
  const T* x = inp + std::size_t(row) * C;
  const T* dy = dout + std::size_t(row) * C;
  T* dx = dinp_acc + std::size_t(row) * C;
  const float m = mean ? mean[row] : 0.0f;
  const float s = rstd[row];
  float sum_g = 0.0f, sum_gx = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float g = to_f32(dy[c]) * norm_gamma(to_f32(weight[c]), zc);
    sum_g += g;
    sum_gx += g * ((to_f32(x[c]) - m) * s);
  }
  const float mean_g = mean ? warp_sum(sum_g) / C : 0.0f;
  const float mean_gx = warp_sum(sum_gx) / C;
  for (int c = lane; c < C; c += 32) {
    const float g = to_f32(dy[c]) * norm_gamma(to_f32(weight[c]), zc);
    const float xhat = (to_f32(x[c]) - m) * s;
    dx[c] = from_f32<T>(to_f32(dx[c]) + norm_dx(g, xhat, s, mean_g, mean_gx));
  }
}

// Block (cx, ty): columns [32 cx, 32 cx + 32), rows [kNormTileRows ty, kNormTileRows (ty + 1)).
// Writes partial_w[ty][c] (and partial_b[ty][c]) in a fixed order.
template <typename T>
__global__ void norm_param_partial_kernel(float* partial_w, float* partial_b, const T* dout, const T* inp,
                                          const float* mean, const float* rstd, int N, int C) {
  __shared__ float sw[8][33], sb[8][33];
  const int c = blockIdx.x * 32 + threadIdx.x;
  const int r0 = blockIdx.y * kNormTileRows;
  const int r1 = min(r0 + kNormTileRows, N);
  float aw = 0.0f, ab = 0.0f;
  if (c < C) {
    for (int r = r0 + threadIdx.y; r < r1; r += 8) {
      const float dy = to_f32(dout[std::size_t(r) * C + c]);
      const float m = mean ? mean[r] : 0.0f;
      aw += dy * ((to_f32(inp[std::size_t(r) * C + c]) - m) * rstd[r]);
      ab += dy;
    }
  }
  sw[threadIdx.y][threadIdx.x] = aw;
  sb[threadIdx.y][threadIdx.x] = ab;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    float w = 0.0f, b = 0.0f;
    for (int y = 0; y < 8; ++y) {
      w += sw[y][threadIdx.x];
      b += sb[y][threadIdx.x];
    }
    partial_w[std::size_t(blockIdx.y) * C + c] = w;
    if (partial_b) partial_b[std::size_t(blockIdx.y) * C + c] = b;
  }
}

__global__ void sum_partials_kernel(float* dst, const float* partial, int tiles, int C) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C) return;
  float acc = 0.0f;
  for (int t = 0; t < tiles; ++t) acc += partial[std::size_t(t) * C + c];
  dst[c] += acc;
}

// b == null: plain norm of inp; otherwise residual_out = inp + b and the norm of that.
void norm_forward(cudaStream_t s, DType t, void* out, float* mean, float* rstd, const void* inp, const void* b,
                  void* residual_out, const void* weight, const void* bias, int N, int C, float eps, bool center,
                  bool zc) {
  if (N == 0) return;
  const unsigned blocks = (N + kRowsPerBlock - 1) / kRowsPerBlock;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    if (b) {
      norm_forward_kernel<T, true><<<blocks, 32 * kRowsPerBlock, 0, s>>>(
          static_cast<T*>(out), mean, rstd, static_cast<const T*>(inp), static_cast<const T*>(b),
          static_cast<T*>(residual_out), static_cast<const T*>(weight), static_cast<const T*>(bias), N, C, eps, center,
          zc);
    } else {
      norm_forward_kernel<T, false><<<blocks, 32 * kRowsPerBlock, 0, s>>>(
          static_cast<T*>(out), mean, rstd, static_cast<const T*>(inp), nullptr, nullptr, static_cast<const T*>(weight),
          static_cast<const T*>(bias), N, C, eps, center, zc);
    }
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void norm_backward(cudaStream_t s, DType t, Workspace& ws, void* dinp_acc, float* dweight, float* dbias,
                   const void* dout, const void* inp, const void* weight, const float* mean, const float* rstd, int N,
                   int C, bool zc) {
  if (N == 0) return;
  const int tiles = static_cast<int>(ceil_div(N, kNormTileRows));
  Carver cv(ws.get(norm_backward_scratch_bytes(N, C)));
  float* pw = cv.take<float>(std::size_t(tiles) * C);
  float* pb = dbias ? cv.take<float>(std::size_t(tiles) * C) : nullptr;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    norm_dinp_kernel<T><<<(N + kRowsPerBlock - 1) / kRowsPerBlock, 32 * kRowsPerBlock, 0, s>>>(
        static_cast<T*>(dinp_acc), static_cast<const T*>(dout), static_cast<const T*>(inp),
        static_cast<const T*>(weight), mean, rstd, N, C, zc);
    GPTRAIN_CUDA_CHECK_LAUNCH();
    norm_param_partial_kernel<T><<<dim3((C + 31) / 32, tiles), dim3(32, 8), 0, s>>>(
        pw, pb, static_cast<const T*>(dout), static_cast<const T*>(inp), mean, rstd, N, C);
    GPTRAIN_CUDA_CHECK_LAUNCH();
  });
  sum_partials_kernel<<<(C + 255) / 256, 256, 0, s>>>(dweight, pw, tiles, C);
  GPTRAIN_CUDA_CHECK_LAUNCH();
  if (dbias) {
    sum_partials_kernel<<<(C + 255) / 256, 256, 0, s>>>(dbias, pb, tiles, C);
    GPTRAIN_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace

void layernorm_forward(cudaStream_t s, DType t, void* out, float* mean, float* rstd, const void* inp,
                       const void* weight, const void* bias, int N, int C, float eps, bool zero_centered_gamma) {
  norm_forward(s, t, out, mean, rstd, inp, nullptr, nullptr, weight, bias, N, C, eps, true, zero_centered_gamma);
}

void layernorm_backward(cudaStream_t s, DType t, Workspace& ws, void* dinp_acc, float* dweight, float* dbias,
                        const void* dout, const void* inp, const void* weight, const float* mean, const float* rstd,
                        int N, int C, bool zero_centered_gamma) {
  norm_backward(s, t, ws, dinp_acc, dweight, dbias, dout, inp, weight, mean, rstd, N, C, zero_centered_gamma);
}

void rmsnorm_forward(cudaStream_t s, DType t, void* out, float* rstd, const void* inp, const void* weight, int N, int C,
                     float eps, bool zero_centered_gamma) {
  norm_forward(s, t, out, nullptr, rstd, inp, nullptr, nullptr, weight, nullptr, N, C, eps, false, zero_centered_gamma);
}

void residual_layernorm_forward(cudaStream_t s, DType t, void* residual_out, void* norm_out, float* mean, float* rstd,
                                const void* a, const void* b, const void* weight, const void* bias, int N, int C,
                                float eps, bool zero_centered_gamma) {
  norm_forward(s, t, norm_out, mean, rstd, a, b, residual_out, weight, bias, N, C, eps, true, zero_centered_gamma);
}

void residual_rmsnorm_forward(cudaStream_t s, DType t, void* residual_out, void* norm_out, float* rstd, const void* a,
                              const void* b, const void* weight, int N, int C, float eps, bool zero_centered_gamma) {
  norm_forward(s, t, norm_out, nullptr, rstd, a, b, residual_out, weight, nullptr, N, C, eps, false,
               zero_centered_gamma);
}

void rmsnorm_backward(cudaStream_t s, DType t, Workspace& ws, void* dinp_acc, float* dweight, const void* dout,
                      const void* inp, const void* weight, const float* rstd, int N, int C, bool zero_centered_gamma) {
  norm_backward(s, t, ws, dinp_acc, dweight, nullptr, dout, inp, weight, nullptr, rstd, N, C, zero_centered_gamma);
}

}  // namespace gptrain::cuda
