// Context-parallel attention blocks on CUDA (attention_block.h): direct kernels, one thread per query
// row (forward, dQ) or key row (dK/dV, so the accumulation needs no atomics and is deterministic), the
// maths of attention_block_math.h in fp32. A correctness twin of the CPU one, not tuned; not yet run on
// a GPU.
#include <cmath>

#include "kernels/attention/attention_block.h"
#include "kernels/attention/attention_block_math.h"
#include "kernels/attention/attention_math.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/dropout/philox.h"

namespace gptrain::cuda {
namespace {

constexpr int kThreads = 128;

struct BlockShape {
  int B, Tl, NH, NKV, HS, H, head0;
  long long ld, ldkv, ldo;
  AttentionBlock blk;
  float scale, dropout_p, dropout_scale;
  uint64_t seed, offset;
};

BlockShape block_shape(int B, int NH, int NKV, int HS, AttentionBlock blk, float p, uint64_t seed, uint64_t offset,
                       HeadSlice heads) {
  BlockShape a;
  a.B = B;
  a.Tl = 2 * blk.chunk;
  a.NH = NH;
  a.NKV = NKV;
  a.HS = HS;
  a.H = heads.total > 0 ? heads.total : NH;
  a.head0 = heads.first;
  a.ld = (NH + 2LL * NKV) * HS;
  a.ldkv = 2LL * NKV * HS;
  a.ldo = static_cast<long long>(NH) * HS;
  a.blk = blk;
  a.scale = 1.0f / sqrtf(static_cast<float>(HS));
  a.dropout_p = p;
  a.dropout_scale = dropout_scale(p);
  a.seed = seed;
  a.offset = offset;
  return a;
}

// The dropout multiplier of probability (b, h, global t, global s).
__device__ float keep_mult(const BlockShape& a, int b, int h, int t, int s) {
  if (a.dropout_p <= 0.0f) return 1.0f;
  const uint64_t j = a.offset + attention_dropout_index(b, a.head0 + h, t, s, a.H, 2 * a.blk.cp * a.blk.chunk);
  return dropout_keep(philox_uniform(a.seed, j), a.dropout_p) ? a.dropout_scale : 0.0f;
}

template <typename T>
__device__ float dot_rows(const T* x, const T* y, int n) {
  float d = 0.0f;
  for (int e = 0; e < n; ++e) d += to_f32(x[e]) * to_f32(y[e]);
  return d;
}

template <typename T>
__global__ void kv_pack_kernel(T* kv, const T* qkv, long long N, int NH, int NKV, int HS) {
  const long long w = 2LL * NKV * HS, ld = (NH + 2LL * NKV) * HS;
  for (long long i = blockIdx.x * blockDim.x + threadIdx.x; i < N * w;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    kv[i] = qkv[(i / w) * ld + static_cast<long long>(NH) * HS + i % w];
}

// One thread per (b, h, local query row): the block's softmax over its visible keys (two passes: max and
// sum, then the output), merged into out_acc / lse.
template <typename T>
__global__ void block_forward_kernel(float* out_acc, float* lse, const T* qkv, const T* kv, BlockShape a, bool first) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(a.B) * a.NH * a.Tl) return;
  const int r = static_cast<int>(i % a.Tl), h = static_cast<int>((i / a.Tl) % a.NH);
  const int b = static_cast<int>(i / (static_cast<long long>(a.Tl) * a.NH)), g = h / (a.NH / a.NKV);
  const AttentionBlock& k = a.blk;
  const int t = cp_global_position(r, k.chunk, k.cp, k.q_rank);
  const T* q = qkv + (static_cast<long long>(b) * a.Tl + r) * a.ld + static_cast<long long>(h) * a.HS;
  float m = -INFINITY;
  for (int s = 0; s < a.Tl; ++s) {
    if (cp_global_position(s, k.chunk, k.cp, k.kv_rank) > t) continue;
    const T* key = kv + (static_cast<long long>(b) * a.Tl + s) * a.ldkv + static_cast<long long>(g) * a.HS;
    m = fmaxf(m, dot_rows(q, key, a.HS) * a.scale);
  }
  float acc[kBlockAttentionMaxHeadSize];
  for (int e = 0; e < a.HS; ++e) acc[e] = 0.0f;
  float sum = 0.0f;
  if (m != -INFINITY) {
    for (int s = 0; s < a.Tl; ++s) {
      const int sg = cp_global_position(s, k.chunk, k.cp, k.kv_rank);
      if (sg > t) continue;
      const T* key = kv + (static_cast<long long>(b) * a.Tl + s) * a.ldkv + static_cast<long long>(g) * a.HS;
      const float p = expf(dot_rows(q, key, a.HS) * a.scale - m);
      sum += p;
      const float pd = p * keep_mult(a, b, h, t, sg);
      const T* v = key + static_cast<long long>(a.NKV) * a.HS;
      for (int e = 0; e < a.HS; ++e) acc[e] += pd * to_f32(v[e]);
    }
  }
  const float lb = m == -INFINITY ? -INFINITY : m + logf(sum);
  float* o = out_acc + (static_cast<long long>(b) * a.Tl + r) * a.ldo + static_cast<long long>(h) * a.HS;
  float* l = lse + (static_cast<long long>(b) * a.NH + h) * a.Tl + r;
  const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
  if (first) {
    *l = lb;
    for (int e = 0; e < a.HS; ++e) o[e] = acc[e] * inv;
    return;
  }
  const float total = lse_combine(*l, lb);
  if (total == -INFINITY) return;
  const float wa = lse_weight(*l, total), wb = lse_weight(lb, total) * inv;
  for (int e = 0; e < a.HS; ++e) o[e] = o[e] * wa + acc[e] * wb;
  *l = total;
}

// One thread per (b, h, local query row): dq_acc += scale * sum_s dS_ts k_s.
template <typename T>
__global__ void block_dq_kernel(float* dq_acc, const T* dout, const T* qkv, const T* kv, const T* out, const float* lse,
                                BlockShape a) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(a.B) * a.NH * a.Tl) return;
  const int r = static_cast<int>(i % a.Tl), h = static_cast<int>((i / a.Tl) % a.NH);
  const int b = static_cast<int>(i / (static_cast<long long>(a.Tl) * a.NH)), g = h / (a.NH / a.NKV);
  const AttentionBlock& k = a.blk;
  const int t = cp_global_position(r, k.chunk, k.cp, k.q_rank);
  const long long orow = (static_cast<long long>(b) * a.Tl + r) * a.ldo + static_cast<long long>(h) * a.HS;
  const T* q = qkv + (static_cast<long long>(b) * a.Tl + r) * a.ld + static_cast<long long>(h) * a.HS;
  const float l = lse[(static_cast<long long>(b) * a.NH + h) * a.Tl + r];
  if (l == -INFINITY) return;
  const float D = dot_rows(dout + orow, out + orow, a.HS);
  float acc[kBlockAttentionMaxHeadSize];
  for (int e = 0; e < a.HS; ++e) acc[e] = 0.0f;
  for (int s = 0; s < a.Tl; ++s) {
    const int sg = cp_global_position(s, k.chunk, k.cp, k.kv_rank);
    if (sg > t) continue;
    const T* key = kv + (static_cast<long long>(b) * a.Tl + s) * a.ldkv + static_cast<long long>(g) * a.HS;
    const T* v = key + static_cast<long long>(a.NKV) * a.HS;
    const float p = expf(dot_rows(q, key, a.HS) * a.scale - l);
    const float ds = p * (dot_rows(dout + orow, v, a.HS) * keep_mult(a, b, h, t, sg) - D);
    for (int e = 0; e < a.HS; ++e) acc[e] += ds * to_f32(key[e]);
  }
  for (int e = 0; e < a.HS; ++e) dq_acc[orow + e] += a.scale * acc[e];
}

// One thread per (b, KV head g, local key row): dK and dV of the key over every query head of its group.
template <typename T>
__global__ void block_dkv_kernel(float* dkv_acc, const T* dout, const T* qkv, const T* kv, const T* out,
                                 const float* lse, BlockShape a) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (i >= static_cast<long long>(a.B) * a.NKV * a.Tl) return;
  const int s = static_cast<int>(i % a.Tl), g = static_cast<int>((i / a.Tl) % a.NKV);
  const int b = static_cast<int>(i / (static_cast<long long>(a.Tl) * a.NKV)), group = a.NH / a.NKV;
  const AttentionBlock& k = a.blk;
  const int sg = cp_global_position(s, k.chunk, k.cp, k.kv_rank);
  const long long krow = (static_cast<long long>(b) * a.Tl + s) * a.ldkv + static_cast<long long>(g) * a.HS;
  const T* key = kv + krow;
  const T* v = key + static_cast<long long>(a.NKV) * a.HS;
  float dk[kBlockAttentionMaxHeadSize], dv[kBlockAttentionMaxHeadSize];
  for (int e = 0; e < a.HS; ++e) dk[e] = dv[e] = 0.0f;
  for (int h = g * group; h < (g + 1) * group; ++h) {
    for (int r = 0; r < a.Tl; ++r) {
      const int t = cp_global_position(r, k.chunk, k.cp, k.q_rank);
      const float l = lse[(static_cast<long long>(b) * a.NH + h) * a.Tl + r];
      if (sg > t || l == -INFINITY) continue;
      const long long orow = (static_cast<long long>(b) * a.Tl + r) * a.ldo + static_cast<long long>(h) * a.HS;
      const T* q = qkv + (static_cast<long long>(b) * a.Tl + r) * a.ld + static_cast<long long>(h) * a.HS;
      const T* dO = dout + orow;
      const float p = expf(dot_rows(q, key, a.HS) * a.scale - l);
      const float mult = keep_mult(a, b, h, t, sg);
      const float ds = p * (dot_rows(dO, v, a.HS) * mult - dot_rows(dO, out + orow, a.HS));
      for (int e = 0; e < a.HS; ++e) {
        dv[e] += p * mult * to_f32(dO[e]);
        dk[e] += a.scale * ds * to_f32(q[e]);
      }
    }
  }
  for (int e = 0; e < a.HS; ++e) {
    dkv_acc[krow + e] += dk[e];
    dkv_acc[krow + static_cast<long long>(a.NKV) * a.HS + e] += dv[e];
  }
}

unsigned blocks_for(long long n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

}  // namespace

void attention_kv_pack(cudaStream_t s, DType t, void* kv, const void* qkv, int N, int NH, int NKV, int HS) {
  if (N == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using TT = decltype(tag);
    kv_pack_kernel<TT><<<grid_for(std::size_t(N) * 2 * NKV * HS, kThreads), kThreads, 0, s>>>(
        static_cast<TT*>(kv), static_cast<const TT*>(qkv), N, NH, NKV, HS);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void attention_block_forward(cudaStream_t s, DType t, float* out_acc, float* lse, const void* qkv, const void* kv,
                             int B, int NH, int NKV, int HS, AttentionBlock blk, bool first, float dropout_p,
                             uint64_t seed, uint64_t offset, HeadSlice heads) {
  const BlockShape a = block_shape(B, NH, NKV, HS, blk, dropout_p, seed, offset, heads);
  const long long rows = static_cast<long long>(B) * NH * a.Tl;
  if (rows == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using TT = decltype(tag);
    block_forward_kernel<TT><<<blocks_for(rows), kThreads, 0, s>>>(out_acc, lse, static_cast<const TT*>(qkv),
                                                                   static_cast<const TT*>(kv), a, first);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void attention_block_backward(cudaStream_t s, DType t, float* dq_acc, float* dkv_acc, const void* dout, const void* qkv,
                              const void* kv, const void* out, const float* lse, int B, int NH, int NKV, int HS,
                              AttentionBlock blk, float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads) {
  const BlockShape a = block_shape(B, NH, NKV, HS, blk, dropout_p, seed, offset, heads);
  const long long qrows = static_cast<long long>(B) * NH * a.Tl, krows = static_cast<long long>(B) * NKV * a.Tl;
  if (qrows == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using TT = decltype(tag);
    block_dq_kernel<TT><<<blocks_for(qrows), kThreads, 0, s>>>(dq_acc, static_cast<const TT*>(dout),
                                                               static_cast<const TT*>(qkv), static_cast<const TT*>(kv),
                                                               static_cast<const TT*>(out), lse, a);
    GPTRAIN_CUDA_CHECK_LAUNCH();
    block_dkv_kernel<TT><<<blocks_for(krows), kThreads, 0, s>>>(dkv_acc, static_cast<const TT*>(dout),
                                                                static_cast<const TT*>(qkv), static_cast<const TT*>(kv),
                                                                static_cast<const TT*>(out), lse, a);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
