// gptrain's own flash-attention kernels (causal, GQA, optional sliding window, segment mask and
// attention dropout),
// the fallback behind cuDNN's fused attention and the only path for fp32 and for dropout/segments.
// Maths and masking: kernels/attention/attention_math.h; dropout numbers: kernels/dropout/philox.h.
//
// Design: tiles of BR = 32 query rows x BC = 32 keys, 256 threads, everything staged in shared
// memory as fp32 (rows padded to an odd stride, so a warp reading 32 different rows at one column
// hits 32 banks). Each tile step is a few block-wide phases separated by __syncthreads:
//   forward:  S = scale Q K^T -> online softmax per row (one warp per 4 rows, lane = key) -> O += P V
//   backward: D = rowsum(dO * O); one kernel per query tile for dQ and one per key tile for dK, dV,
//             both recomputing P from Q, K and the saved logsumexp. No atomics anywhere, and every
//             sum runs in a fixed order: the backward is deterministic.
// Query tiles are launched heaviest first (the causal mask makes late tiles longer). With a sliding
// window, key tiles wholly before a query tile's window (and query tiles wholly past a key tile's
// window, in the dK/dV kernel) are skipped.
// Plain FMA code, not tensor cores: correct on sm_80 and sm_90 first, fast second (cuDNN is the fast path).
#include <cmath>
#include <type_traits>

#include "kernels/attention/attention.h"
#include "kernels/attention/attention_math.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/workspace.h"
#include "kernels/dropout/philox.h"

namespace gptrain::cuda {

namespace {

constexpr int BR = 32;  // query rows per tile
constexpr int BC = 32;  // keys per tile (== warp size: lane = key in the softmax phase)
constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kRowsPerWarp = BR / kWarps;
constexpr int kSLd = BC + 1;  // padded stride of the (BR, BC) score tiles
// A thread's accumulator entries share one head dim d = tid % HSMAX (kThreads is a multiple of
// HSMAX), so each shared-memory value of V, K, Q or dO it reads serves all its entries.

struct AttnShape {
  int B, T, NH, NKV, HS;
  int ld;       // padded shared-memory stride of (rows, HS) tiles
  int row_len;  // (NH + 2 NKV) HS elements per qkv row
  float scale;  // 1 / sqrt(HS)
  float dropout_p;
  float dropout_scale;
  uint64_t seed, offset;
  int drop_head0, drop_heads;  // the dropout index's head numbering: head h is the layer's drop_head0 + h
  int window;                  // sliding window (attention_math.h); -1 none
};

// First key tile (start) that query tile [t0, t0 + BR) must visit: earlier keys are outside every
// row's window.
__device__ __forceinline__ int first_key_tile(int t0, int window) {
  return attention_window_first(t0, window) / BC * BC;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Whether probability (b, h, t, s) survives dropout.
__device__ __forceinline__ bool attn_keep(const AttnShape& a, int b, int h, int t, int s) {
  if (a.dropout_p <= 0.0f) return true;
  const uint64_t j = a.offset + attention_dropout_index(b, a.drop_head0 + h, t, s, a.drop_heads, a.T);
  return dropout_keep(philox_uniform(a.seed, j), a.dropout_p);
}

// Loads `rows` rows (starting at sequence position p0) of one head slot of qkv (or of a (B, T, NH*HS)
// tensor when row_len/col say so) into a (rows, ld) fp32 tile; rows past T are zero.
template <typename T>
__device__ void load_rows(float* dst, const T* base, int b, int p0, int rows, int col, int row_len,
                          const AttnShape& a) {
  for (int idx = threadIdx.x; idx < rows * a.HS; idx += kThreads) {
    const int r = idx / a.HS, d = idx % a.HS;
    const int p = p0 + r;
    dst[r * a.ld + d] = p < a.T ? to_f32(base[(std::size_t(b) * a.T + p) * row_len + col + d]) : 0.0f;
  }
}

__device__ __forceinline__ float dot(const float* x, const float* y, int n) {
  float acc = 0.0f;
  for (int d = 0; d < n; ++d) acc += x[d] * y[d];
  return acc;
}

// ---------------------------------------------------------------------------------------------
// Forward: block (query tile, head, batch).
template <typename T, int HSMAX>
__global__ void __launch_bounds__(kThreads)
    flash_forward_kernel(T* out, float* lse, const T* qkv, const int32_t* segment_ids, AttnShape a) {
  constexpr int ACC = BR * HSMAX / kThreads;  // (row, dim) accumulator entries per thread
  constexpr int kRowStep = kThreads / HSMAX;  // rows between a thread's entries
  const int d = threadIdx.x % HSMAX, r0 = threadIdx.x / HSMAX;
  extern __shared__ float smem[];
  float* sQ = smem;
  float* sK = sQ + BR * a.ld;
  float* sV = sK + BC * a.ld;
  float* sS = sV + BC * a.ld;
  float* sM = sS + BR * kSLd;
  float* sL = sM + BR;
  float* sCorr = sL + BR;

  const int qtile = gridDim.x - 1 - blockIdx.x;  // heaviest (latest) tiles first
  const int h = blockIdx.y, b = blockIdx.z;
  const int kvh = h / (a.NH / a.NKV);
  const int t0 = qtile * BR;
  const int32_t* seg = segment_ids ? segment_ids + std::size_t(b) * a.T : nullptr;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  load_rows(sQ, qkv, b, t0, BR, h * a.HS, a.row_len, a);
  if (threadIdx.x < BR) {
    sM[threadIdx.x] = -INFINITY;
    sL[threadIdx.x] = 0.0f;
  }
  float acc[ACC];
#pragma unroll
  for (int e = 0; e < ACC; ++e) acc[e] = 0.0f;

  const int kv_end = min(a.T, t0 + BR);
  for (int s0 = first_key_tile(t0, a.window); s0 < kv_end; s0 += BC) {
    __syncthreads();  // previous step is done with sK, sV, sS
    load_rows(sK, qkv, b, s0, BC, (a.NH + kvh) * a.HS, a.row_len, a);
    load_rows(sV, qkv, b, s0, BC, (a.NH + a.NKV + kvh) * a.HS, a.row_len, a);
    __syncthreads();
    // S = scale Q K^T with the mask applied (-inf)
    for (int idx = threadIdx.x; idx < BR * BC; idx += kThreads) {
      const int r = idx / BC, c = idx % BC;
      const int t = t0 + r, s = s0 + c;
      float sc = -INFINITY;
      if (t < a.T && s < a.T && attention_allowed(t, s, seg, a.window))
        sc = dot(sQ + r * a.ld, sK + c * a.ld, a.HS) * a.scale;
      sS[r * kSLd + c] = sc;
    }
    __syncthreads();
    // online softmax: warp `warp` owns rows [warp*kRowsPerWarp, +kRowsPerWarp), lane = key
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const int r = warp * kRowsPerWarp + i;
      const int t = t0 + r, s = s0 + lane;
      const float sc = sS[r * kSLd + lane];
      const float m_old = sM[r];
      const float m_new = fmaxf(m_old, warp_max(sc));
      const float p = sc == -INFINITY ? 0.0f : expf(sc - m_new);
      const float corr = m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
      const float l_new = sL[r] * corr + warp_sum(p);
      const float pd = (p > 0.0f && !attn_keep(a, b, h, t, s)) ? 0.0f : p * a.dropout_scale;
      sS[r * kSLd + lane] = pd;
      __syncwarp();
      if (lane == 0) {
        sM[r] = m_new;
        sL[r] = l_new;
        sCorr[r] = corr;
      }
    }
    __syncthreads();
    // O = O * corr + P V; this thread owns dim d of rows r0 + e * kRowStep
    if (d < a.HS) {
#pragma unroll
      for (int e = 0; e < ACC; ++e) acc[e] *= sCorr[r0 + e * kRowStep];
#pragma unroll 4
      for (int c = 0; c < BC; ++c) {
        const float v = sV[c * a.ld + d];
#pragma unroll
        for (int e = 0; e < ACC; ++e) acc[e] += sS[(r0 + e * kRowStep) * kSLd + c] * v;
      }
    }
  }
  __syncthreads();
#pragma unroll
  for (int e = 0; e < ACC; ++e) {
    const int r = r0 + e * kRowStep, t = t0 + r;
    if (d < a.HS && t < a.T) out[(std::size_t(b) * a.T + t) * a.NH * a.HS + h * a.HS + d] = from_f32<T>(acc[e] / sL[r]);
  }
  if (threadIdx.x < BR && t0 + threadIdx.x < a.T)
    lse[(std::size_t(b) * a.NH + h) * a.T + t0 + threadIdx.x] = sM[threadIdx.x] + logf(sL[threadIdx.x]);
}

// ---------------------------------------------------------------------------------------------
// Backward preprocessing: Dv[b, h, t] = dO[b, t, h, :] . O[b, t, h, :], one warp per (b, t, h).
template <typename T>
__global__ void attn_rowdot_kernel(float* Dv, const T* dout, const T* out, AttnShape a) {
  const std::size_t row = std::size_t(blockIdx.x) * kWarps + threadIdx.x / 32;  // (b*T + t)*NH + h
  const int lane = threadIdx.x % 32;
  if (row >= std::size_t(a.B) * a.T * a.NH) return;
  const T* x = dout + row * a.HS;
  const T* y = out + row * a.HS;
  float acc = 0.0f;
  for (int d = lane; d < a.HS; d += 32) acc += to_f32(x[d]) * to_f32(y[d]);
  acc = warp_sum(acc);
  if (lane == 0) {
    const int h = static_cast<int>(row % a.NH);
    const std::size_t bt = row / a.NH;
    const int t = static_cast<int>(bt % a.T), b = static_cast<int>(bt / a.T);
    Dv[(std::size_t(b) * a.NH + h) * a.T + t] = acc;
  }
}

// For the (r, c) entries of a (query tile t0, key tile s0) pair, the probability with dropout
// applied (pd) and dS = P (dP - D). sQ, sdO are query-row tiles; sK, sV key tiles.
__device__ __forceinline__ void attn_probs_grads(const AttnShape& a, int b, int h, int t0, int s0, const int32_t* seg,
                                                 const float* sQ, const float* sdO, const float* sK, const float* sV,
                                                 const float* sLse, const float* sD, float* sP, float* sdS) {
  for (int idx = threadIdx.x; idx < BR * BC; idx += kThreads) {
    const int r = idx / BC, c = idx % BC;
    const int t = t0 + r, s = s0 + c;
    float pd = 0.0f, ds = 0.0f;
    if (t < a.T && s < a.T && attention_allowed(t, s, seg, a.window)) {
      const float p = expf(dot(sQ + r * a.ld, sK + c * a.ld, a.HS) * a.scale - sLse[r]);
      const bool keep = attn_keep(a, b, h, t, s);
      const float dp = keep ? dot(sdO + r * a.ld, sV + c * a.ld, a.HS) * a.dropout_scale : 0.0f;
      pd = keep ? p * a.dropout_scale : 0.0f;
      ds = p * (dp - sD[r]);
    }
    if (sP) sP[r * kSLd + c] = pd;
    sdS[r * kSLd + c] = ds;
  }
}

// dQ: block (query tile, head, batch); dQ = scale * sum_s dS K.
template <typename T, int HSMAX>
__global__ void __launch_bounds__(kThreads)
    flash_backward_dq_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* Dv,
                             const int32_t* segment_ids, AttnShape a) {
  constexpr int ACC = BR * HSMAX / kThreads;
  constexpr int kRowStep = kThreads / HSMAX;
  const int d = threadIdx.x % HSMAX, r0 = threadIdx.x / HSMAX;
  extern __shared__ float smem[];
  float* sQ = smem;
  float* sdO = sQ + BR * a.ld;
  float* sK = sdO + BR * a.ld;
  float* sV = sK + BC * a.ld;
  float* sdS = sV + BC * a.ld;
  float* sLse = sdS + BR * kSLd;
  float* sD = sLse + BR;

  const int qtile = gridDim.x - 1 - blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int kvh = h / (a.NH / a.NKV);
  const int t0 = qtile * BR;
  const int32_t* seg = segment_ids ? segment_ids + std::size_t(b) * a.T : nullptr;

  load_rows(sQ, qkv, b, t0, BR, h * a.HS, a.row_len, a);
  load_rows(sdO, dout, b, t0, BR, h * a.HS, a.NH * a.HS, a);
  if (threadIdx.x < BR) {
    const int t = t0 + threadIdx.x;
    const std::size_t i = (std::size_t(b) * a.NH + h) * a.T + t;
    sLse[threadIdx.x] = t < a.T ? lse[i] : 0.0f;
    sD[threadIdx.x] = t < a.T ? Dv[i] : 0.0f;
  }
  float acc[ACC];
#pragma unroll
  for (int e = 0; e < ACC; ++e) acc[e] = 0.0f;

  const int kv_end = min(a.T, t0 + BR);
  for (int s0 = first_key_tile(t0, a.window); s0 < kv_end; s0 += BC) {
    __syncthreads();
    load_rows(sK, qkv, b, s0, BC, (a.NH + kvh) * a.HS, a.row_len, a);
    load_rows(sV, qkv, b, s0, BC, (a.NH + a.NKV + kvh) * a.HS, a.row_len, a);
    __syncthreads();
    attn_probs_grads(a, b, h, t0, s0, seg, sQ, sdO, sK, sV, sLse, sD, nullptr, sdS);
    __syncthreads();
    if (d < a.HS) {
#pragma unroll 4
      for (int c = 0; c < BC; ++c) {
        const float k = sK[c * a.ld + d];
#pragma unroll
        for (int e = 0; e < ACC; ++e) acc[e] += sdS[(r0 + e * kRowStep) * kSLd + c] * k;
      }
    }
  }
#pragma unroll
  for (int e = 0; e < ACC; ++e) {
    const int r = r0 + e * kRowStep, t = t0 + r;
    if (d < a.HS && t < a.T)
      dqkv[(std::size_t(b) * a.T + t) * a.row_len + h * a.HS + d] = from_f32<T>(acc[e] * a.scale);
  }
}

// dK, dV: block (key tile, KV head, batch), summing over the query heads of the group and all
// query tiles that can see the keys: dV = sum_t Pd dO, dK = scale * sum_t dS Q.
template <typename T, int HSMAX>
__global__ void __launch_bounds__(kThreads)
    flash_backward_dkv_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* Dv,
                              const int32_t* segment_ids, AttnShape a) {
  constexpr int ACC = BC * HSMAX / kThreads;
  constexpr int kKeyStep = kThreads / HSMAX;  // keys between a thread's entries
  const int d = threadIdx.x % HSMAX, c0 = threadIdx.x / HSMAX;
  extern __shared__ float smem[];
  float* sK = smem;
  float* sV = sK + BC * a.ld;
  float* sQ = sV + BC * a.ld;
  float* sdO = sQ + BR * a.ld;
  float* sP = sdO + BR * a.ld;
  float* sdS = sP + BR * kSLd;
  float* sLse = sdS + BR * kSLd;
  float* sD = sLse + BR;

  const int ktile = blockIdx.x;  // early key tiles see the most queries; they come first already
  const int kvh = blockIdx.y, b = blockIdx.z;
  const int group = a.NH / a.NKV;
  const int s0 = ktile * BC;
  const int32_t* seg = segment_ids ? segment_ids + std::size_t(b) * a.T : nullptr;

  load_rows(sK, qkv, b, s0, BC, (a.NH + kvh) * a.HS, a.row_len, a);
  load_rows(sV, qkv, b, s0, BC, (a.NH + a.NKV + kvh) * a.HS, a.row_len, a);
  float dk[ACC], dv[ACC];
#pragma unroll
  for (int e = 0; e < ACC; ++e) dk[e] = dv[e] = 0.0f;

  // Queries past q_end do not see any key of this tile (the window ends before them).
  const int q_end = a.window < 0 || s0 + BC + a.window >= a.T ? a.T : s0 + BC + a.window;
  for (int h = kvh * group; h < (kvh + 1) * group; ++h) {
    for (int t0 = (s0 / BR) * BR; t0 < q_end; t0 += BR) {
      __syncthreads();  // previous step is done with sQ, sdO, sP, sdS (and sK/sV loads are visible)
      load_rows(sQ, qkv, b, t0, BR, h * a.HS, a.row_len, a);
      load_rows(sdO, dout, b, t0, BR, h * a.HS, a.NH * a.HS, a);
      if (threadIdx.x < BR) {
        const int t = t0 + threadIdx.x;
        const std::size_t i = (std::size_t(b) * a.NH + h) * a.T + t;
        sLse[threadIdx.x] = t < a.T ? lse[i] : 0.0f;
        sD[threadIdx.x] = t < a.T ? Dv[i] : 0.0f;
      }
      __syncthreads();
      attn_probs_grads(a, b, h, t0, s0, seg, sQ, sdO, sK, sV, sLse, sD, sP, sdS);
      __syncthreads();
      if (d < a.HS) {
#pragma unroll 4
        for (int r = 0; r < BR; ++r) {
          const float go = sdO[r * a.ld + d], q = sQ[r * a.ld + d];
#pragma unroll
          for (int e = 0; e < ACC; ++e) {
            const int c = c0 + e * kKeyStep;
            dv[e] += sP[r * kSLd + c] * go;
            dk[e] += sdS[r * kSLd + c] * q;
          }
        }
      }
    }
  }
#pragma unroll
  for (int e = 0; e < ACC; ++e) {
    const int c = c0 + e * kKeyStep;
    const int s = s0 + c;
    if (d < a.HS && s < a.T) {
      T* row = dqkv + (std::size_t(b) * a.T + s) * a.row_len;
      row[(a.NH + kvh) * a.HS + d] = from_f32<T>(dk[e] * a.scale);
      row[(a.NH + a.NKV + kvh) * a.HS + d] = from_f32<T>(dv[e]);
    }
  }
}

AttnShape make_shape(int B, int T, int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset,
                     HeadSlice heads, int window) {
  // Shape and dropout range are validated by the caller (CudaBackend), which can format errors.
  AttnShape a{};
  a.B = B, a.T = T, a.NH = NH, a.NKV = NKV, a.HS = HS;
  a.ld = HS % 2 == 0 ? HS + 1 : HS;
  a.row_len = (NH + 2 * NKV) * HS;
  a.scale = 1.0f / std::sqrt(static_cast<float>(HS));
  a.dropout_p = dropout_p;
  a.dropout_scale = dropout_scale(dropout_p);
  a.seed = seed, a.offset = offset;
  a.drop_head0 = heads.first, a.drop_heads = heads.total > 0 ? heads.total : NH;
  a.window = window;
  return a;
}

// Calls f(std::integral_constant<int, HSMAX>) with the smallest compiled head-size bound >= HS.
template <typename F>
void dispatch_head_size(int HS, F&& f) {
  // Two bounds keep the build small (3 dtypes x 2 bounds x 3 kernels x 2 archs).
  if (HS <= 64) {
    f(std::integral_constant<int, 64>{});
  } else {
    f(std::integral_constant<int, 128>{});
  }
}

template <typename K>
void set_smem(K kernel, std::size_t bytes) {
  GPTRAIN_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

}  // namespace

void flash_attention_forward(cudaStream_t s, DType t, void* out, float* lse, const void* qkv,
                             const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                             uint64_t seed, uint64_t offset, HeadSlice heads, int window) {
  if (B == 0 || T == 0 || NH == 0) return;
  const AttnShape a = make_shape(B, T, NH, NKV, HS, dropout_p, seed, offset, heads, window);
  const std::size_t smem = sizeof(float) * (std::size_t(BR + 2 * BC) * a.ld + BR * kSLd + 3 * BR);
  const dim3 grid((T + BR - 1) / BR, NH, B);
  dispatch_dtype(t, [&](auto tag) {
    using TT = decltype(tag);
    dispatch_head_size(HS, [&](auto hs) {
      constexpr int HSMAX = decltype(hs)::value;
      auto kernel = flash_forward_kernel<TT, HSMAX>;
      set_smem(kernel, smem);
      kernel<<<grid, kThreads, smem, s>>>(static_cast<TT*>(out), lse, static_cast<const TT*>(qkv), segment_ids, a);
    });
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void flash_attention_backward(cudaStream_t s, DType t, Workspace& ws, void* dqkv, const void* dout, const void* qkv,
                              const void* out, const float* lse, const int32_t* segment_ids, int B, int T, int NH,
                              int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads,
                              int window) {
  if (B == 0 || T == 0 || NH == 0) return;
  const AttnShape a = make_shape(B, T, NH, NKV, HS, dropout_p, seed, offset, heads, window);
  const std::size_t rows = std::size_t(B) * T * NH;
  float* Dv = static_cast<float*>(ws.get(flash_attention_backward_scratch_bytes(B, T, NH)));
  const std::size_t smem_dq = sizeof(float) * (std::size_t(2 * BR + 2 * BC) * a.ld + BR * kSLd + 2 * BR);
  const std::size_t smem_dkv = sizeof(float) * (std::size_t(2 * BR + 2 * BC) * a.ld + 2 * BR * kSLd + 2 * BR);
  dispatch_dtype(t, [&](auto tag) {
    using TT = decltype(tag);
    attn_rowdot_kernel<TT><<<static_cast<unsigned>((rows + kWarps - 1) / kWarps), kThreads, 0, s>>>(
        Dv, static_cast<const TT*>(dout), static_cast<const TT*>(out), a);
    GPTRAIN_CUDA_CHECK_LAUNCH();
    dispatch_head_size(HS, [&](auto hs) {
      constexpr int HSMAX = decltype(hs)::value;
      auto dq = flash_backward_dq_kernel<TT, HSMAX>;
      set_smem(dq, smem_dq);
      dq<<<dim3((T + BR - 1) / BR, NH, B), kThreads, smem_dq, s>>>(
          static_cast<TT*>(dqkv), static_cast<const TT*>(dout), static_cast<const TT*>(qkv), lse, Dv, segment_ids, a);
      GPTRAIN_CUDA_CHECK_LAUNCH();
      auto dkv = flash_backward_dkv_kernel<TT, HSMAX>;
      set_smem(dkv, smem_dkv);
      dkv<<<dim3((T + BC - 1) / BC, NKV, B), kThreads, smem_dkv, s>>>(
          static_cast<TT*>(dqkv), static_cast<const TT*>(dout), static_cast<const TT*>(qkv), lse, Dv, segment_ids, a);
      GPTRAIN_CUDA_CHECK_LAUNCH();
    });
  });
}

}  // namespace gptrain::cuda
