// Mixture-of-experts CUDA kernels (design: moe.h), the CPU twin's results in the same layout:
// - router forward/backward: one thread per token running moe_math.h's row maths (E is small);
// - dispatch plan: one block per expert scans the choices in token order (cub::BlockScan) for their
//   position, decides which it keeps (position: the first `capacity`; probs: rank by probability, ties
//   to the earlier token, counted against every choice of the expert), scans again for the kept rows'
//   slots; a second kernel adds each expert's segment offset. Deterministic: no atomics anywhere;
// - permute / unpermute: element-parallel copies and fixed-k-order sums in fp32; unpermute's dprobs is
//   a warp per choice (fixed lane slices, shuffle tree);
// - losses: fixed per-(sequence, expert) or per-row partials, then one block sums them in index order
//   (cub::BlockReduce: a fixed tree).
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/workspace.h"
#include "kernels/moe/moe.h"
#include "kernels/moe/moe_math.h"

namespace gptrain::cuda {

namespace {

constexpr int kBlock = 256;
using BlockScan = cub::BlockScan<int, kBlock>;
using BlockReduce = cub::BlockReduce<double, kBlock>;

__global__ void router_forward_kernel(float* probs, int32_t* experts, float* scores, const float* logits, int N, int E,
                                      int K, MoeScore score, bool pre_softmax, MoeChoice choice) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const std::size_t r = n;
  moe_route_row(probs + r * K, experts + r * K, scores + r * E, logits + r * E, E, K, score, pre_softmax, choice);
}

__global__ void router_backward_kernel(float* dlogits, const float* dprobs, const float* dscores, const float* logits,
                                       const int32_t* experts, int N, int E, int K, MoeScore score, bool pre_softmax) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const std::size_t r = n;
  moe_route_backward_row(dlogits + r * E, dprobs + r * K, dscores ? dscores + r * E : nullptr, logits + r * E,
                         experts + r * K, E, K, score, pre_softmax);
}

// Block e: dest_row[i] = the slot of choice i among expert e's kept choices (token order), -1 if dropped;
// segment_rows[e] = the segment's rows. NK = N * K choices.
__global__ void dispatch_expert_kernel(int32_t* dest_row, int32_t* segment_rows, const int32_t* experts,
                                       const float* probs, int NK, int N, int capacity, MoeDropPolicy policy,
                                       bool pad_to_capacity) {
  __shared__ typename BlockScan::TempStorage scan;
  const int e = blockIdx.x;
  // Pass 1: position of each of e's choices in token order, and their count.
  int count = 0;
  for (int base = 0; base < NK; base += kBlock) {
    const int i = base + threadIdx.x;
    const int mine = i < NK && experts[i] == e;
    int pos = 0, total = 0;
    BlockScan(scan).ExclusiveSum(mine, pos, total);
    if (mine) dest_row[i] = count + pos;
    count += total;
    __syncthreads();
  }
  const bool drops = capacity >= 0 && capacity < N && count > capacity;
  // Pass 2: keep or drop, then the kept choices' slots in token order.
  int kept_count = 0;
  for (int base = 0; base < NK; base += kBlock) {
    const int i = base + threadIdx.x;
    int keep = 0;
    if (i < NK && experts[i] == e) {
      keep = 1;
      if (drops && policy == MoeDropPolicy::Position) keep = dest_row[i] < capacity;
      if (drops && policy == MoeDropPolicy::Probs) {
        int rank = 0;  // choices of e with a higher probability, or an equal one earlier
        for (int j = 0; j < NK; ++j)
          if (experts[j] == e && (probs[j] > probs[i] || (probs[j] == probs[i] && j < i))) ++rank;
        keep = rank < capacity;
      }
    }
    int slot = 0, total = 0;
    BlockScan(scan).ExclusiveSum(keep, slot, total);
    if (i < NK && experts[i] == e) dest_row[i] = keep ? kept_count + slot : -1;
    kept_count += total;
    __syncthreads();
  }
  if (threadIdx.x == 0) segment_rows[e] = pad_to_capacity ? min(capacity, N) : kept_count;
}

// Slots within an expert -> rows of the permuted buffer (add the rows of the experts before it).
__global__ void dispatch_offset_kernel(int32_t* dest_row, const int32_t* segment_rows, const int32_t* experts, int NK) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= NK || dest_row[i] < 0) return;
  int offset = 0;
  for (int e = 0; e < experts[i]; ++e) offset += segment_rows[e];
  dest_row[i] += offset;
}

template <typename T>
__global__ void permute_kernel(T* out, const T* inp, const int32_t* dest_row, int K, int C, std::size_t total) {
  for (std::size_t x = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; x < total;
       x += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t i = x / C, c = x % C;  // choice i = n * K + k
    const int32_t row = dest_row[i];
    if (row >= 0) out[std::size_t(row) * C + c] = inp[(i / K) * C + c];
  }
}

// out (N, C) = sum over the kept choices k of w[n, k] * rows[dest_row[n, k]], w = probs or 1 (probs null):
// unpermute, and the backward of permute.
template <typename T>
__global__ void gather_sum_kernel(T* out, const T* rows, const float* probs, const int32_t* dest_row, int K, int C,
                                  std::size_t total) {
  for (std::size_t x = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; x < total;
       x += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t n = x / C, c = x % C;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k) {
      const int32_t row = dest_row[n * K + k];
      if (row >= 0) acc += (probs ? probs[n * K + k] : 1.0f) * to_f32(rows[std::size_t(row) * C + c]);
    }
    out[x] = from_f32<T>(acc);
  }
}

// A warp per choice i = n * K + k: dinp[row] = p * dout[n] and dprobs[i] = <dout[n], inp[row]>.
template <typename T>
__global__ void unpermute_backward_kernel(T* dinp, float* dprobs, const T* dout, const T* inp, const float* probs,
                                          const int32_t* dest_row, int K, int C, int NK) {
  const int lane = threadIdx.x % 32;
  const int i = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (i >= NK) return;
  const int32_t row = dest_row[i];
  if (row < 0) {
    if (lane == 0) dprobs[i] = 0.0f;
    return;
  }
  const float p = probs[i];
  const T* g = dout + std::size_t(i / K) * C;
  const std::size_t r = std::size_t(row) * C;
  float dot = 0.0f;
  for (int c = lane; c < C; c += 32) {
    const float gc = to_f32(g[c]);
    dinp[r + c] = from_f32<T>(p * gc);
    dot += gc * to_f32(inp[r + c]);
  }
  for (int o = 16; o > 0; o /= 2) dot += __shfl_down_sync(0xffffffffu, dot, o);
  if (lane == 0) dprobs[i] = dot;
}

// A warp per token row n: out_acc[n] += sigmoid(z_n) * shared[n].
template <typename T>
__global__ void shared_gate_forward_kernel(T* out, const T* shared, const T* gate_logits, int N, int C) {
  const int lane = threadIdx.x % 32;
  const int n = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (n >= N) return;
  const float g = moe_sigmoid(to_f32(gate_logits[n]));
  const std::size_t r = std::size_t(n) * C;
  for (int c = lane; c < C; c += 32) out[r + c] = from_f32<T>(to_f32(out[r + c]) + g * to_f32(shared[r + c]));
}

template <typename T>
__global__ void input_jitter_kernel(T* out, const T* inp, std::size_t n, float eps, uint64_t seed, uint64_t offset,
                                    bool accumulate) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float v = to_f32(inp[i]) * moe_jitter_factor(seed, offset + i, eps);
  out[i] = from_f32<T>(accumulate ? to_f32(out[i]) + v : v);
}

// A warp per token row n: the dot <dout[n], shared[n]> first (so dshared may alias shared), then the row.
template <typename T>
__global__ void shared_gate_backward_kernel(T* dshared, T* dgate_logits, const T* dout, const T* shared,
                                            const T* gate_logits, int N, int C) {
  const int lane = threadIdx.x % 32;
  const int n = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  if (n >= N) return;
  const std::size_t r = std::size_t(n) * C;
  float dot = 0.0f;
  for (int c = lane; c < C; c += 32) dot += to_f32(dout[r + c]) * to_f32(shared[r + c]);
  for (int o = 16; o > 0; o /= 2) dot += __shfl_down_sync(0xffffffffu, dot, o);
  const float z = to_f32(gate_logits[n]), g = moe_sigmoid(z);
  if (lane == 0) dgate_logits[n] = from_f32<T>(moe_shared_gate_dlogit(z, dot));
  for (int c = lane; c < C; c += 32) dshared[r + c] = from_f32<T>(g * to_f32(dout[r + c]));
}

// Block (b, e): count[b, e] = choices of e in sequence b's S tokens; partial[b, e] = (sum_s scores) * count
// (when scores is non-null).
__global__ void balance_partial_kernel(double* partial, double* count, const float* scores, const int32_t* experts,
                                       int S, int E, int K) {
  __shared__ typename BlockReduce::TempStorage red;
  const int b = blockIdx.x / E, e = blockIdx.x % E;
  double p = 0.0, c = 0.0;
  for (int s = threadIdx.x; s < S; s += kBlock) {
    const std::size_t n = std::size_t(b) * S + s;
    if (scores) p += scores[n * E + e];
    for (int k = 0; k < K; ++k) c += experts[n * K + k] == e ? 1.0 : 0.0;
  }
  const double ct = BlockReduce(red).Sum(c);
  __syncthreads();
  const double pt = BlockReduce(red).Sum(p);
  if (threadIdx.x == 0) {
    count[blockIdx.x] = ct;
    if (partial) partial[blockIdx.x] = pt * ct;
  }
}

// out[0] = scale * sum of v[0..n) in a fixed order (one block).
__global__ void scaled_sum_kernel(float* out, const double* v, int n, double scale) {
  __shared__ typename BlockReduce::TempStorage red;
  double acc = 0.0;
  for (int i = threadIdx.x; i < n; i += kBlock) acc += v[i];
  acc = BlockReduce(red).Sum(acc);
  if (threadIdx.x == 0) *out = static_cast<float>(scale * acc);
}

__global__ void balance_backward_kernel(float* dscores, const double* count, int S, int E, double scale,
                                        std::size_t total) {
  for (std::size_t x = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; x < total;
       x += std::size_t(gridDim.x) * blockDim.x) {
    const std::size_t n = x / E, e = x % E;
    dscores[x] = static_cast<float>(scale * count[(n / S) * E + e]);
  }
}

__global__ void z_rows_kernel(double* z2, const float* logits, int N, int E) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const double z = moe_logsumexp(logits + std::size_t(n) * E, E);
  z2[n] = z * z;
}

__global__ void z_backward_kernel(float* dlogits_acc, const float* logits, int N, int E, float coeff_times_dloss) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const float* l = logits + std::size_t(n) * E;
  float* d = dlogits_acc + std::size_t(n) * E;
  const float z = moe_logsumexp(l, E);
  const float g = coeff_times_dloss * 2.0f * z / static_cast<float>(N);
  for (int e = 0; e < E; ++e) d[e] += g * expf(l[e] - z);
}

// Sinkhorn's d0 (N) and d1 (E) to convergence in one block (the column sums need every row between
// iterations); d1 starts at 1.
__global__ void sinkhorn_scale_kernel(float* d0, float* d1, const float* logits, int N, int E) {
  __shared__ typename BlockReduce::TempStorage temp;
  __shared__ float error;
  __shared__ float change;
  for (int e = threadIdx.x; e < E; e += blockDim.x) d1[e] = 1.0f;
  if (threadIdx.x == 0) error = 1e9f;
  __syncthreads();
  while (error > kMoeSinkhornTol) {
    for (int n = threadIdx.x; n < N; n += blockDim.x) d0[n] = moe_sinkhorn_d0(logits + std::size_t(n) * E, d1, N, E);
    if (threadIdx.x == 0) change = 0.0f;
    __syncthreads();
    for (int e = 0; e < E; ++e) {
      double part = 0.0;
      for (int n = threadIdx.x; n < N; n += blockDim.x) part += d0[n] * expf(logits[std::size_t(n) * E + e]);
      const double sum = BlockReduce(temp).Sum(part);
      if (threadIdx.x == 0) {
        const float v = 1.0f / E / (static_cast<float>(sum) + kMoeSinkhornEps);
        change += fabsf(d1[e] - v);  // d1[e] is still the previous iteration's
        d1[e] = v;
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) error = change / E;
    __syncthreads();
  }
}

// normed = d1 * exp(l) * d0 of each row (when d0 is set), then the row's choice and probabilities.
__global__ void sinkhorn_route_kernel(float* probs, int32_t* experts, float* normed, const float* d0, const float* d1,
                                      const float* logits, int N, int E, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= N) return;
  const std::size_t r = n;
  const float* l = logits + r * E;
  const float* choice = l;
  if (d0 != nullptr) {
    for (int e = 0; e < E; ++e) normed[r * E + e] = d1[e] * expf(l[e]) * d0[n];
    choice = normed + r * E;
  }
  moe_sinkhorn_route_row(probs + r * K, experts + r * K, choice, l, E, K);
}

unsigned blocks_for(int n) { return static_cast<unsigned>((n + kBlock - 1) / kBlock); }

}  // namespace

void moe_router_forward(cudaStream_t s, float* probs, int32_t* experts, float* scores, const float* logits, int N,
                        int E, int K, MoeScore score, bool pre_softmax, MoeChoice choice) {
  if (N == 0) return;
  router_forward_kernel<<<blocks_for(N), kBlock, 0, s>>>(probs, experts, scores, logits, N, E, K, score, pre_softmax,
                                                         choice);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_router_backward(cudaStream_t s, float* dlogits, const float* dprobs, const float* dscores, const float* logits,
                         const int32_t* experts, int N, int E, int K, MoeScore score, bool pre_softmax) {
  if (N == 0) return;
  router_backward_kernel<<<blocks_for(N), kBlock, 0, s>>>(dlogits, dprobs, dscores, logits, experts, N, E, K, score,
                                                          pre_softmax);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_sinkhorn_router_forward(cudaStream_t s, Workspace& ws, float* probs, int32_t* experts, float* normed,
                                 const float* logits, int N, int E, int K, bool train) {
  if (N == 0) return;
  float* d0 = nullptr;
  float* d1 = nullptr;
  if (train) {
    Carver carve(ws.get(moe_sinkhorn_router_scratch_bytes(N, E, train)));
    d0 = carve.take<float>(N);
    d1 = carve.take<float>(E);
    sinkhorn_scale_kernel<<<1, kBlock, 0, s>>>(d0, d1, logits, N, E);
    GPTRAIN_CUDA_CHECK_LAUNCH();
  }
  sinkhorn_route_kernel<<<blocks_for(N), kBlock, 0, s>>>(probs, experts, normed, d0, d1, logits, N, E, K);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_dispatch_plan(cudaStream_t s, int32_t* dest_row, int32_t* segment_rows, const int32_t* experts,
                       const float* probs, int N, int E, int K, int capacity, MoeDropPolicy policy,
                       bool pad_to_capacity) {
  const int NK = N * K;
  dispatch_expert_kernel<<<E, kBlock, 0, s>>>(dest_row, segment_rows, experts, probs, NK, N, capacity, policy,
                                              pad_to_capacity);
  GPTRAIN_CUDA_CHECK_LAUNCH();
  if (NK == 0) return;
  dispatch_offset_kernel<<<blocks_for(NK), kBlock, 0, s>>>(dest_row, segment_rows, experts, NK);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_permute(cudaStream_t s, DType t, void* out, const void* inp, const int32_t* dest_row, int N, int K, int C,
                 int R) {
  if (R > 0 && C > 0) GPTRAIN_CUDA_CHECK(cudaMemsetAsync(out, 0, std::size_t(R) * C * dtype_size(t), s));
  const std::size_t total = std::size_t(N) * K * C;
  if (total == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    permute_kernel<T><<<grid_for(total, kBlock), kBlock, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(inp),
                                                                 dest_row, K, C, total);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

namespace {

void gather_sum(cudaStream_t s, DType t, void* out, const void* rows, const float* probs, const int32_t* dest_row,
                int N, int K, int C) {
  const std::size_t total = std::size_t(N) * C;
  if (total == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    gather_sum_kernel<T><<<grid_for(total, kBlock), kBlock, 0, s>>>(static_cast<T*>(out), static_cast<const T*>(rows),
                                                                    probs, dest_row, K, C, total);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace

void moe_permute_backward(cudaStream_t s, DType t, void* dinp, const void* dout, const int32_t* dest_row, int N, int K,
                          int C) {
  gather_sum(s, t, dinp, dout, nullptr, dest_row, N, K, C);
}

void moe_unpermute(cudaStream_t s, DType t, void* out, const void* inp, const float* probs, const int32_t* dest_row,
                   int N, int K, int C) {
  gather_sum(s, t, out, inp, probs, dest_row, N, K, C);
}

void moe_unpermute_backward(cudaStream_t s, DType t, void* dinp, float* dprobs, const void* dout, const void* inp,
                            const float* probs, const int32_t* dest_row, int N, int K, int C, int R) {
  if (R > 0 && C > 0) GPTRAIN_CUDA_CHECK(cudaMemsetAsync(dinp, 0, std::size_t(R) * C * dtype_size(t), s));
  const int NK = N * K;
  if (NK == 0) return;
  constexpr int kWarps = kBlock / 32;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    unpermute_backward_kernel<T><<<static_cast<unsigned>((NK + kWarps - 1) / kWarps), kBlock, 0, s>>>(
        static_cast<T*>(dinp), dprobs, static_cast<const T*>(dout), static_cast<const T*>(inp), probs, dest_row, K, C,
        NK);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_load_balancing_loss(cudaStream_t s, Workspace& ws, float* loss, const float* scores, const int32_t* experts,
                             int N, int E, int K, int seqs, float coeff) {
  const int cells = seqs * E;
  Carver carve(ws.get(moe_load_balancing_loss_scratch_bytes(E, seqs)));
  double* partial = carve.take<double>(cells);
  double* count = carve.take<double>(cells);
  if (N > 0) {
    balance_partial_kernel<<<cells, kBlock, 0, s>>>(partial, count, scores, experts, N / seqs, E, K);
    GPTRAIN_CUDA_CHECK_LAUNCH();
  }
  scaled_sum_kernel<<<1, kBlock, 0, s>>>(loss, partial, N > 0 ? cells : 0, coeff * moe_balance_scale(N, E, K, seqs));
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_load_balancing_loss_backward(cudaStream_t s, Workspace& ws, float* dscores, const int32_t* experts, int N,
                                      int E, int K, int seqs, float coeff_times_dloss) {
  if (N == 0) return;
  const int cells = seqs * E;
  double* count = static_cast<double*>(ws.get(moe_load_balancing_loss_backward_scratch_bytes(E, seqs)));
  balance_partial_kernel<<<cells, kBlock, 0, s>>>(nullptr, count, nullptr, experts, N / seqs, E, K);
  GPTRAIN_CUDA_CHECK_LAUNCH();
  const std::size_t total = std::size_t(N) * E;
  balance_backward_kernel<<<grid_for(total, kBlock), kBlock, 0, s>>>(
      dscores, count, N / seqs, E, coeff_times_dloss * moe_balance_scale(N, E, K, seqs), total);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_z_loss(cudaStream_t s, Workspace& ws, float* loss, const float* logits, int N, int E, float coeff) {
  // Never an empty request: scaled_sum_kernel gets a valid z2 even for N = 0.
  double* z2 = static_cast<double*>(ws.get(moe_z_loss_scratch_bytes(N > 0 ? N : 1)));
  if (N > 0) {
    z_rows_kernel<<<blocks_for(N), kBlock, 0, s>>>(z2, logits, N, E);
    GPTRAIN_CUDA_CHECK_LAUNCH();
  }
  scaled_sum_kernel<<<1, kBlock, 0, s>>>(loss, z2, N, N > 0 ? static_cast<double>(coeff) / N : 0.0);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_z_loss_backward(cudaStream_t s, float* dlogits_acc, const float* logits, int N, int E,
                         float coeff_times_dloss) {
  if (N == 0) return;
  z_backward_kernel<<<blocks_for(N), kBlock, 0, s>>>(dlogits_acc, logits, N, E, coeff_times_dloss);
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_input_jitter(cudaStream_t s, DType t, void* out, const void* inp, std::size_t n, float eps, uint64_t seed,
                      uint64_t offset) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    input_jitter_kernel<T><<<static_cast<unsigned>((n + kBlock - 1) / kBlock), kBlock, 0, s>>>(
        static_cast<T*>(out), static_cast<const T*>(inp), n, eps, seed, offset, false);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_input_jitter_backward(cudaStream_t s, DType t, void* dinp_acc, const void* dout, std::size_t n, float eps,
                               uint64_t seed, uint64_t offset) {
  if (n == 0) return;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    input_jitter_kernel<T><<<static_cast<unsigned>((n + kBlock - 1) / kBlock), kBlock, 0, s>>>(
        static_cast<T*>(dinp_acc), static_cast<const T*>(dout), n, eps, seed, offset, true);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_shared_gate_forward(cudaStream_t s, DType t, void* out_acc, const void* shared, const void* gate_logits, int N,
                             int C) {
  if (N == 0 || C == 0) return;
  constexpr int kWarps = kBlock / 32;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    shared_gate_forward_kernel<T><<<static_cast<unsigned>((N + kWarps - 1) / kWarps), kBlock, 0, s>>>(
        static_cast<T*>(out_acc), static_cast<const T*>(shared), static_cast<const T*>(gate_logits), N, C);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void moe_shared_gate_backward(cudaStream_t s, DType t, void* dshared, void* dgate_logits, const void* dout,
                              const void* shared, const void* gate_logits, int N, int C) {
  if (N == 0) return;
  constexpr int kWarps = kBlock / 32;
  dispatch_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    shared_gate_backward_kernel<T><<<static_cast<unsigned>((N + kWarps - 1) / kWarps), kBlock, 0, s>>>(
        static_cast<T*>(dshared), static_cast<T*>(dgate_logits), static_cast<const T*>(dout),
        static_cast<const T*>(shared), static_cast<const T*>(gate_logits), N, C);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

}  // namespace gptrain::cuda
