// Tensor-core flash attention (FlashAttention-2 schedule) for bf16/fp16 and head sizes 64 and 128,
// with the whole contract of kernels/backend.h: causal, GQA, segment masks, attention dropout with
// the shared Philox index. Products run on WMMA 16x16x16 fragments (16-bit inputs, fp32
// accumulators); softmax statistics, lse and D stay fp32; P and dS are rounded to the 16-bit type
// once, as the operand of the next product (as FlashAttention does).
// Tile loops and per-element maths: attention_tc_math.h (shared with the CPU simulation test).
//
//   forward   block = (query tile of 64 rows, head, batch), 4 warps x 16 rows. Q fragments stay in
//             registers; per key tile of 64: S = Q K^T (WMMA) -> fp32 scores in shared memory ->
//             online softmax, 2 lanes per row -> P (16-bit) in shared memory -> O = O c + P V with
//             O in WMMA accumulators. Key tiles past the causal edge are never visited.
//   backward  D = rowsum(dO * O), then two kernels that recompute P from Q, K and lse, so no float
//             atomics and a fixed summation order (deterministic):
//             dQ   block = (query tile, head, batch): dQ = scale * sum over key tiles dS K
//             dKdV block = (key tile, KV head, batch), 8 warps: for each query head of the GQA group
//                  and each query tile that sees the keys: S^T, dP^T (WMMA) -> P', dS (16-bit) ->
//                  dV += P'^T dO, dK += dS^T Q; the group's heads are summed in order in registers.
//
// Streamed tiles (K, V; Q, dO, lse, D in dK/dV) are copied with cp.async; at HS 64 (every GPT-2 size)
// they are double-buffered, the next tile in flight while this one is computed on (see `pipelined`).
//
// WMMA leaves the element order of an accumulator fragment unspecified; the kernels learn it at run
// time by loading a 16x16 table of codes r*16 + c into an accumulator fragment (load and mma share one
// mapping for a fragment type, so element i of every accumulator then sits at (row[i], col[i])).
//
// Resources (CUDA 13.0 ptxas -v; SASS checked with cuobjdump: HMMA.16816.F32 per kernel, cp.async =
// LDGSTS). Registers fp16/bf16, sm_90 (sm_80 within a few): forward HS64 128/153, HS128 194/254;
// dQ HS64 129/174, HS128 219/255; dK/dV HS64 164/232, HS128 224/255. Spills only at bf16 HS 128
// (12-32 bytes); every kernel has a 16-byte stack frame from Philox's indexed output (dropout path
// only). Shared memory per block: forward 73.2/79.2 KiB (HS 64/128), dQ 65.5/79.5, dK/dV 75.0/88.5.
// HMMA per block step: forward 64/128, dQ 96/192, dK/dV 64/128. bf16 fragment loads compile to
// 32-bit LDS (fp16 ones to LDSM): a PTX mma.sync + ldmatrix version would load bf16 faster.
#include "kernels/attention/attention.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <mma.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/attention/attention_tc_math.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/dtype.cuh"
#include "kernels/cuda/workspace.h"

namespace gptrain::cuda {

namespace {

using namespace nvcuda;
using attn_tc::kBc;
using attn_tc::kBr;
using attn_tc::kHalfRow;

constexpr int kFrag = 16;               // WMMA fragment edge
constexpr int kFwdWarps = kBr / kFrag;  // forward: one warp per 16 query rows
constexpr int kFwdThreads = 32 * kFwdWarps;
constexpr int kDqWarps = kBr / kFrag;  // dQ: one warp per 16 query rows
constexpr int kDqThreads = 32 * kDqWarps;
constexpr int kKeyGroups = kBc / kFrag;    // dK/dV: 4 groups of 16 keys ...
constexpr int kDkvWarps = 2 * kKeyGroups;  // ... x 2 halves (query columns, then head dims)
constexpr int kDkvThreads = 32 * kDkvWarps;
static_assert(kBr == 64 && kBc == 64 && kHalfRow == 32, "softmax phase: 16 rows per warp, 2 lanes x 32 keys per row");
static_assert(kBr / kFrag / 2 * 2 == kBr / kFrag, "dK/dV phase 1: each half computes kBr / 32 query fragments");

template <typename T>
using FragA = wmma::fragment<wmma::matrix_a, kFrag, kFrag, kFrag, T, wmma::row_major>;
template <typename T>
using FragBRow = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, T, wmma::row_major>;
template <typename T>
using FragBCol = wmma::fragment<wmma::matrix_b, kFrag, kFrag, kFrag, T, wmma::col_major>;
using Acc = wmma::fragment<wmma::accumulator, kFrag, kFrag, kFrag, float>;
constexpr int kAccElems = Acc::num_elements;

struct TcShape {
  int B, T, NH, NKV;
  int row_len;  // (NH + 2 NKV) HS elements per qkv row
  float scale;  // 1 / sqrt(HS)
  float dropout_p, dropout_scale;
  uint64_t seed, offset;
  int drop_head0, drop_heads;  // the dropout index's head numbering: head h is the layer's drop_head0 + h
  int window;                  // sliding window (attention_math.h); -1 none
};

constexpr std::size_t round128(std::size_t n) { return (n + 127) / 128 * 128; }

// Shared-memory strides (elements). WMMA needs 16-bit strides that are multiples of 8 and fp32 ones
// multiples of 4, and 32-byte aligned fragment starts; the +8 / +4 padding shifts consecutive rows by
// 4 banks so a fragment load's 8 rows x 16 bytes hit 32 different banks.
template <int HS>
struct Ld {
  static constexpr int kTile = HS + 8;  // (64, HS) 16-bit tiles of Q, K, V, dO
  static constexpr int kP = kBc + 8;    // (rows, 64) 16-bit tiles of P and dS
  static constexpr int kS = kBc + 4;    // (16, 64) fp32 score tile of a warp
  static constexpr std::size_t kTileBytes = round128(std::size_t(kBr) * kTile * 2);
  static constexpr int kTileElems = static_cast<int>(kTileBytes / 2);
  // Buffers of the streamed tiles (K, V; Q, dO in dK/dV): 2 = the next tile is copied (cp.async)
  // while this one is computed on; HS 128 keeps 1 to stay under the 99 KiB of sm_86/sm_89.
  static constexpr int kStages = HS <= 64 ? 2 : 1;
  static_assert(HS % kFrag == 0 && kBr == kBc, "tiles of 64 rows, whole fragments along HS");
};

// The 16x16 code table (fp32) followed by each lane's element codes (int, 32 x kAccElems).
constexpr std::size_t kMapBytes = 256 * sizeof(float) + 32 * kAccElems * sizeof(int);
constexpr std::size_t kStatBytes = round128(kBr * sizeof(float));

template <int HS>
struct FwdSmem {
  static constexpr std::size_t q = 0, k = q + Ld<HS>::kTileBytes, v = k + Ld<HS>::kStages * Ld<HS>::kTileBytes,
                               s = v + Ld<HS>::kStages * Ld<HS>::kTileBytes,
                               p = s + round128(std::size_t(kFwdWarps) * kFrag * Ld<HS>::kS * 4),
                               stat = p + round128(std::size_t(kFwdWarps) * kFrag * Ld<HS>::kP * 2),
                               map = stat + kStatBytes, bytes = map + kMapBytes;
};
template <int HS>
struct DqSmem {
  static constexpr std::size_t q = 0, dout = q + Ld<HS>::kTileBytes, k = dout + Ld<HS>::kTileBytes,
                               v = k + Ld<HS>::kStages * Ld<HS>::kTileBytes,
                               ds = v + Ld<HS>::kStages * Ld<HS>::kTileBytes,
                               lse = ds + round128(std::size_t(kDqWarps) * kFrag * Ld<HS>::kP * 2),
                               d = lse + kStatBytes, map = d + kStatBytes, bytes = map + kMapBytes;
};
template <int HS>
struct DkvSmem {
  static constexpr std::size_t k = 0, v = k + Ld<HS>::kTileBytes, q = v + Ld<HS>::kTileBytes,
                               dout = q + Ld<HS>::kStages * Ld<HS>::kTileBytes,
                               pt = dout + Ld<HS>::kStages * Ld<HS>::kTileBytes,
                               dst = pt + round128(std::size_t(kBc) * Ld<HS>::kP * 2),
                               lse = dst + round128(std::size_t(kBc) * Ld<HS>::kP * 2),
                               d = lse + Ld<HS>::kStages * kStatBytes, map = d + Ld<HS>::kStages * kStatBytes,
                               bytes = map + kMapBytes;
};
// Largest block (dK/dV, HS 128) stays under the 99 KiB opt-in limit of sm_86/sm_89 (163 KiB on sm_80, 227 KiB on
// sm_90).
static_assert(DkvSmem<128>::bytes <= 99 * 1024 && FwdSmem<128>::bytes <= 99 * 1024 && DqSmem<128>::bytes <= 99 * 1024 &&
                  DkvSmem<64>::bytes <= 99 * 1024 && FwdSmem<64>::bytes <= 99 * 1024 && DqSmem<64>::bytes <= 99 * 1024,
              "shared memory per block");

// Loads rows [p0, p0 + 64) of the HS columns starting at `col` of a (B, T, row_len) tensor into a
// (64, HS + 8) tile, 8 elements (16 bytes) per load; rows past T are zero.
template <typename T, int HS, int NT>
__device__ __forceinline__ void load_tile(T* dst, const T* src, int b, int p0, int col, int row_len, int T_len) {
  constexpr int kChunks = HS / 8;
  for (int idx = threadIdx.x; idx < kBr * kChunks; idx += NT) {
    const int r = idx / kChunks, c = (idx % kChunks) * 8, p = p0 + r;
    uint4 v = make_uint4(0u, 0u, 0u, 0u);
    if (p < T_len) v = *reinterpret_cast<const uint4*>(src + (std::size_t(b) * T_len + p) * row_len + col + c);
    *reinterpret_cast<uint4*>(dst + r * Ld<HS>::kTile + c) = v;
  }
}

// Stores tile rows [r0, r0 + nrows) (sequence positions p0 + r) into a (B, T, row_len) tensor at
// column `col`, skipping rows past T. Threads `lane` of `nt` take part.
template <typename T, int HS>
__device__ __forceinline__ void store_tile_rows(T* dst, const T* tile, int r0, int nrows, int p0, int b, int col,
                                                int row_len, int T_len, int lane, int nt) {
  constexpr int kChunks = HS / 8;
  for (int idx = lane; idx < nrows * kChunks; idx += nt) {
    const int r = r0 + idx / kChunks, c = (idx % kChunks) * 8, p = p0 + r;
    if (p < T_len)
      *reinterpret_cast<uint4*>(dst + (std::size_t(b) * T_len + p) * row_len + col + c) =
          *reinterpret_cast<const uint4*>(tile + r * Ld<HS>::kTile + c);
  }
}

// load_tile with cp.async (16 bytes per copy, L2 only); rows past T are zeroed with plain stores.
// The block sees the tile after __pipeline_wait_prior covering its commit group and a __syncthreads.
template <typename T, int HS, int NT>
__device__ __forceinline__ void load_tile_async(T* dst, const T* src, int b, int p0, int col, int row_len, int T_len) {
  constexpr int kChunks = HS / 8;
  for (int idx = threadIdx.x; idx < kBr * kChunks; idx += NT) {
    const int r = idx / kChunks, c = (idx % kChunks) * 8, p = p0 + r;
    T* d = dst + r * Ld<HS>::kTile + c;
    if (p < T_len)
      __pipeline_memcpy_async(d, src + (std::size_t(b) * T_len + p) * row_len + col + c, 16);
    else
      *reinterpret_cast<uint4*>(d) = make_uint4(0u, 0u, 0u, 0u);
  }
}

// Runs body(i, stage) for items i = 0 .. n-1 whose tiles load(i, stage) copies into buffer `stage`
// (load_tile_async and plain shared stores only). kStages == 2: item i + 1 is copied while item i is
// computed on (double buffering); kStages == 1: each item is copied, then computed on. Every thread
// of the block must call this with the same n (it contains __syncthreads), and so may body.
template <int kStages, typename Load, typename Body>
__device__ __forceinline__ void pipelined(int n, Load&& load, Body&& body) {
  static_assert(kStages == 1 || kStages == 2, "single or double buffering");
  if constexpr (kStages == 2) {
    if (n > 0) {
      load(0, 0);
      __pipeline_commit();
    }
    for (int i = 0; i < n; ++i) {
      const int stage = i & 1;
      if (i + 1 < n) {
        load(i + 1, stage ^ 1);  // that buffer was released by the __syncthreads ending item i - 1
        __pipeline_commit();
        __pipeline_wait_prior(1);  // item i's group is complete, item i + 1's may still be in flight
      } else {
        __pipeline_wait_prior(0);
      }
      __syncthreads();  // item i's tiles, copied by all threads, are visible
      body(i, stage);
      __syncthreads();  // everyone is done with `stage` before item i + 2 refills it
    }
  } else {
    for (int i = 0; i < n; ++i) {
      __syncthreads();  // the previous item is done with the buffers
      load(i, 0);
      __pipeline_commit();
      __pipeline_wait_prior(0);
      __syncthreads();
      body(i, 0);
    }
  }
}

__device__ __forceinline__ void fill_coord_table(float* map, int nt) {
  for (int i = threadIdx.x; i < 256; i += nt) map[i] = static_cast<float>(i);
}

// (row, col) of each element of an accumulator fragment (see the header comment). Warp 0 also
// leaves the codes row*16 + col in the lane table after the map (read by the dropout loops, which
// must not index register arrays); visible to all after the caller's next __syncthreads.
__device__ __forceinline__ void fragment_coords(float* map, int (&row)[kAccElems], int (&col)[kAccElems]) {
  Acc f;
  wmma::load_matrix_sync(f, map, kFrag, wmma::mem_row_major);
  int* codes = reinterpret_cast<int*>(map + 256) + (threadIdx.x % 32) * kAccElems;
#pragma unroll
  for (int i = 0; i < kAccElems; ++i) {
    const int code = static_cast<int>(f.x[i]);
    row[i] = code / kFrag;
    col[i] = code % kFrag;
    if (threadIdx.x < 32) codes[i] = code;
  }
}

__device__ __forceinline__ const int* lane_codes(const float* map) {
  return reinterpret_cast<const int*>(map + 256) + (threadIdx.x % 32) * kAccElems;
}

__device__ __forceinline__ bool keep_of(const TcShape& a, int b, int h, int t, int s) {
  return attn_tc::attention_keep(a.dropout_p, a.seed, a.offset, b, a.drop_head0 + h, t, s, a.drop_heads, a.T);
}

// ---------------------------------------------------------------------------------------------
template <typename T, int HS>
__global__ void __launch_bounds__(kFwdThreads)
    tc_forward_kernel(T* out, float* lse, const T* qkv, const int32_t* segment_ids, TcShape a) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using L = Ld<HS>;
  using S = FwdSmem<HS>;
  constexpr int kD = HS / kFrag;  // fragments along the head dim
  extern __shared__ __align__(128) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem + S::q);
  T* sK0 = reinterpret_cast<T*>(smem + S::k);  // kStages buffers each
  T* sV0 = reinterpret_cast<T*>(smem + S::v);
  float* map = reinterpret_cast<float*>(smem + S::map);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int qtile = gridDim.x - 1 - blockIdx.x;  // heaviest (latest) tiles first
  const int h = blockIdx.y, b = blockIdx.z;
  const int kvh = h / (a.NH / a.NKV);
  const int t0 = qtile * kBr;
  const int32_t* seg = segment_ids ? segment_ids + std::size_t(b) * a.T : nullptr;
  float* sS = reinterpret_cast<float*>(smem + S::s) + warp * kFrag * L::kS;  // (16, 64) this warp's scores
  T* sP = reinterpret_cast<T*>(smem + S::p) + warp * kFrag * L::kP;          // (16, 64) its probabilities
  float* sStat = reinterpret_cast<float*>(smem + S::stat) + warp * kFrag;    // (16) its row factors

  fill_coord_table(map, kFwdThreads);
  load_tile<T, HS, kFwdThreads>(sQ, qkv, b, t0, h * HS, a.row_len, a.T);
  __syncthreads();
  int frow[kAccElems], fcol[kAccElems];
  fragment_coords(map, frow, fcol);
  FragA<T> qf[kD];
#pragma unroll
  for (int k = 0; k < kD; ++k) wmma::load_matrix_sync(qf[k], sQ + warp * kFrag * L::kTile + k * kFrag, L::kTile);
  Acc o[kD];
#pragma unroll
  for (int j = 0; j < kD; ++j) wmma::fill_fragment(o[j], 0.0f);

  // Softmax phase: lane handles row r of the warp, keys c = 2 i + half (interleaved: fewer bank conflicts).
  const int r = lane / 2, half = lane % 2;
  const int t = t0 + warp * kFrag + r;
  float m = -INFINITY, l = 0.0f;

  const int kt0 = attn_tc::attention_kv_tile_first(t0, a.window);  // key tiles before it: outside the window
  auto load_kv = [&](int item, int stage) {                        // key tile kt0 + `item`
    const int s0 = (kt0 + item) * kBc;
    load_tile_async<T, HS, kFwdThreads>(sK0 + stage * L::kTileElems, qkv, b, s0, (a.NH + kvh) * HS, a.row_len, a.T);
    load_tile_async<T, HS, kFwdThreads>(sV0 + stage * L::kTileElems, qkv, b, s0, (a.NH + a.NKV + kvh) * HS, a.row_len,
                                        a.T);
  };
  pipelined<L::kStages>(attn_tc::attention_kv_tiles(t0, a.T, a.window), load_kv, [&](int item, int stage) {
    const int s0 = (kt0 + item) * kBc;
    const T* sK = sK0 + stage * L::kTileElems;
    const T* sV = sV0 + stage * L::kTileElems;
    // S (16, 64) = Q_w K^T, one 16-key fragment at a time
#pragma unroll
    for (int n = 0; n < kBc / kFrag; ++n) {
      Acc sc;
      wmma::fill_fragment(sc, 0.0f);
#pragma unroll
      for (int k = 0; k < kD; ++k) {
        FragBCol<T> kb;  // K^T: element (d, key) at sK[key * ld + d]
        wmma::load_matrix_sync(kb, sK + n * kFrag * L::kTile + k * kFrag, L::kTile);
        wmma::mma_sync(sc, qf[k], kb, sc);
      }
      wmma::store_matrix_sync(sS + n * kFrag, sc, L::kS, wmma::mem_row_major);
    }
    __syncwarp();
    float x[kHalfRow];
#pragma unroll
    for (int i = 0; i < kHalfRow; ++i) {
      const int c = 2 * i + half;
      x[i] = attn_tc::attention_visible(t, s0 + c, a.T, seg, a.window) ? sS[r * L::kS + c] * a.scale : -INFINITY;
    }
    float mx = attn_tc::online_softmax_max(x, kHalfRow);
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    const float m_new = fmaxf(m, mx);
    const float corr = attn_tc::online_softmax_rescale(m, m_new);
    // Dropout: bit i = key 2 i + half kept. A rolled loop keeps the Philox code out of the unrolled one.
    uint32_t keep = 0xffffffffu;
    if (a.dropout_p > 0.0f) {
#pragma unroll 1
      for (int i = 0; i < kHalfRow; ++i)
        if (!keep_of(a, b, h, t, s0 + 2 * i + half)) keep &= ~(1u << i);
    }
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kHalfRow; ++i) {
      const int c = 2 * i + half;
      const float p = attn_tc::online_softmax_prob(x[i], m_new);
      sum += p;
      sP[r * L::kP + c] = from_f32<T>((keep >> i) & 1u ? p * a.dropout_scale : 0.0f);
    }
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    l = l * corr + sum;
    m = m_new;
    if (half == 0) sStat[r] = corr;
    __syncwarp();
    // O = O c + P V
#pragma unroll
    for (int j = 0; j < kD; ++j)
#pragma unroll
      for (int i = 0; i < kAccElems; ++i) o[j].x[i] *= sStat[frow[i]];
    FragA<T> pf[kBc / kFrag];
#pragma unroll
    for (int k = 0; k < kBc / kFrag; ++k) wmma::load_matrix_sync(pf[k], sP + k * kFrag, L::kP);
#pragma unroll
    for (int j = 0; j < kD; ++j)
#pragma unroll
      for (int k = 0; k < kBc / kFrag; ++k) {
        FragBRow<T> vb;  // V: element (key, d) at sV[key * ld + d]
        wmma::load_matrix_sync(vb, sV + k * kFrag * L::kTile + j * kFrag, L::kTile);
        wmma::mma_sync(o[j], pf[k], vb, o[j]);
      }
    __syncwarp();  // sStat is rewritten below / next step
  });
  // o = O / l, staged (16-bit) in this warp's rows of sQ (its Q lives in registers now), then stored.
  if (half == 0) sStat[r] = l;
  __syncwarp();
  T* sO = sQ + warp * kFrag * L::kTile;
#pragma unroll
  for (int j = 0; j < kD; ++j)
#pragma unroll
    for (int i = 0; i < kAccElems; ++i) {
      const float li = sStat[frow[i]];
      sO[frow[i] * L::kTile + j * kFrag + fcol[i]] = from_f32<T>(li > 0.0f ? o[j].x[i] / li : 0.0f);
    }
  if (half == 0 && t < a.T) lse[(std::size_t(b) * a.NH + h) * a.T + t] = attn_tc::online_softmax_lse(m, l);
  __syncwarp();
  store_tile_rows<T, HS>(out, sQ, warp * kFrag, kFrag, t0, b, h * HS, a.NH * HS, a.T, lane, 32);
#else
  __trap();  // the host selects these kernels only on sm_80+
#endif
}

// ---------------------------------------------------------------------------------------------
// D[b, h, t] = dO[b, t, h, :] . O[b, t, h, :], one warp per (b, t, h).
template <typename T>
__global__ void tc_rowdot_kernel(float* Dv, const T* dout, const T* out, int B, int T_len, int NH, int HS) {
  const std::size_t row = std::size_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;  // (b*T + t)*NH + h
  const int lane = threadIdx.x % 32;
  if (row >= std::size_t(B) * T_len * NH) return;
  float acc = 0.0f;
  for (int d = lane; d < HS; d += 32) acc += to_f32(dout[row * HS + d]) * to_f32(out[row * HS + d]);
  for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if (lane == 0) {
    const int h = static_cast<int>(row % NH);
    const std::size_t bt = row / NH;
    const int t = static_cast<int>(bt % T_len), b = static_cast<int>(bt / T_len);
    Dv[(std::size_t(b) * NH + h) * T_len + t] = acc;
  }
}

// Loads lse and D of query rows [t0, t0 + 64) of head h (0 past T).
__device__ __forceinline__ void load_row_stats(float* sLse, float* sD, const float* lse, const float* Dv, int b, int h,
                                               int t0, const TcShape& a) {
  if (threadIdx.x < kBr) {
    const int t = t0 + threadIdx.x;
    const std::size_t i = (std::size_t(b) * a.NH + h) * a.T + t;
    sLse[threadIdx.x] = t < a.T ? lse[i] : 0.0f;
    sD[threadIdx.x] = t < a.T ? Dv[i] : 0.0f;
  }
}

// dQ: block (query tile, head, batch), warp w owns query rows 16w .. 16w + 15.
template <typename T, int HS>
__global__ void __launch_bounds__(kDqThreads)
    tc_backward_dq_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* Dv,
                          const int32_t* segment_ids, TcShape a) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using L = Ld<HS>;
  using S = DqSmem<HS>;
  constexpr int kD = HS / kFrag;
  extern __shared__ __align__(128) unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem + S::q);
  T* sdO = reinterpret_cast<T*>(smem + S::dout);
  T* sK0 = reinterpret_cast<T*>(smem + S::k);  // kStages buffers each
  T* sV0 = reinterpret_cast<T*>(smem + S::v);
  float* sLse = reinterpret_cast<float*>(smem + S::lse);
  float* sD = reinterpret_cast<float*>(smem + S::d);
  float* map = reinterpret_cast<float*>(smem + S::map);

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int qtile = gridDim.x - 1 - blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int kvh = h / (a.NH / a.NKV);
  const int t0 = qtile * kBr;
  const int32_t* seg = segment_ids ? segment_ids + std::size_t(b) * a.T : nullptr;
  T* sdS = reinterpret_cast<T*>(smem + S::ds) + warp * kFrag * L::kP;  // (16, 64) this warp's dS

  fill_coord_table(map, kDqThreads);
  load_tile<T, HS, kDqThreads>(sQ, qkv, b, t0, h * HS, a.row_len, a.T);
  load_tile<T, HS, kDqThreads>(sdO, dout, b, t0, h * HS, a.NH * HS, a.T);
  load_row_stats(sLse, sD, lse, Dv, b, h, t0, a);
  __syncthreads();
  int frow[kAccElems], fcol[kAccElems];
  fragment_coords(map, frow, fcol);
  FragA<T> qf[kD];  // Q in registers; dO fragments are reloaded from shared memory (register budget)
#pragma unroll
  for (int k = 0; k < kD; ++k) wmma::load_matrix_sync(qf[k], sQ + warp * kFrag * L::kTile + k * kFrag, L::kTile);
  const int* codes = lane_codes(map);
  Acc dq[kD];
#pragma unroll
  for (int j = 0; j < kD; ++j) wmma::fill_fragment(dq[j], 0.0f);

  const int kt0 = attn_tc::attention_kv_tile_first(t0, a.window);  // key tiles before it: outside the window
  auto load_kv = [&](int item, int stage) {                        // key tile kt0 + `item`
    const int s0 = (kt0 + item) * kBc;
    load_tile_async<T, HS, kDqThreads>(sK0 + stage * L::kTileElems, qkv, b, s0, (a.NH + kvh) * HS, a.row_len, a.T);
    load_tile_async<T, HS, kDqThreads>(sV0 + stage * L::kTileElems, qkv, b, s0, (a.NH + a.NKV + kvh) * HS, a.row_len,
                                       a.T);
  };
  pipelined<L::kStages>(attn_tc::attention_kv_tiles(t0, a.T, a.window), load_kv, [&](int item, int stage) {
    const int s0 = (kt0 + item) * kBc;
    const T* sK = sK0 + stage * L::kTileElems;
    const T* sV = sV0 + stage * L::kTileElems;
#pragma unroll
    for (int n = 0; n < kBc / kFrag; ++n) {
      Acc sc, dp;  // S = Q_w K_n^T, dP = dO_w V_n^T (16 queries x 16 keys)
      wmma::fill_fragment(sc, 0.0f);
      wmma::fill_fragment(dp, 0.0f);
#pragma unroll
      for (int k = 0; k < kD; ++k) {
        FragBCol<T> kb, vb;
        FragA<T> dof;
        wmma::load_matrix_sync(kb, sK + n * kFrag * L::kTile + k * kFrag, L::kTile);
        wmma::mma_sync(sc, qf[k], kb, sc);
        wmma::load_matrix_sync(dof, sdO + warp * kFrag * L::kTile + k * kFrag, L::kTile);
        wmma::load_matrix_sync(vb, sV + n * kFrag * L::kTile + k * kFrag, L::kTile);
        wmma::mma_sync(dp, dof, vb, dp);
      }
      uint32_t keep = 0xffffffffu;  // bit i: element i survives dropout (rolled loop, see the forward)
      if (a.dropout_p > 0.0f) {
#pragma unroll 1
        for (int i = 0; i < kAccElems; ++i) {
          const int code = codes[i];
          if (!keep_of(a, b, h, t0 + warp * kFrag + code / kFrag, s0 + n * kFrag + code % kFrag)) keep &= ~(1u << i);
        }
      }
#pragma unroll
      for (int i = 0; i < kAccElems; ++i) {
        const int rr = warp * kFrag + frow[i], c = n * kFrag + fcol[i];
        const int t = t0 + rr, s = s0 + c;
        float ds = 0.0f;
        if (attn_tc::attention_visible(t, s, a.T, seg, a.window)) {
          const float p = expf(sc.x[i] * a.scale - sLse[rr]);
          ds = attn_tc::attention_prob_grad(p, dp.x[i], sD[rr], (keep >> i) & 1u, a.dropout_scale).ds;
        }
        sdS[frow[i] * L::kP + c] = from_f32<T>(ds);
      }
    }
    __syncwarp();
    // dQ (16, HS) += dS (16, 64) K (64, HS)
#pragma unroll
    for (int k = 0; k < kBc / kFrag; ++k) {
      FragA<T> dsf;
      wmma::load_matrix_sync(dsf, sdS + k * kFrag, L::kP);
#pragma unroll
      for (int j = 0; j < kD; ++j) {
        FragBRow<T> kb;
        wmma::load_matrix_sync(kb, sK + k * kFrag * L::kTile + j * kFrag, L::kTile);
        wmma::mma_sync(dq[j], dsf, kb, dq[j]);
      }
    }
  });
  // dQ * scale, staged in this warp's rows of sQ, into the Q slot of dqkv
  T* sO = sQ + warp * kFrag * L::kTile;
#pragma unroll
  for (int j = 0; j < kD; ++j)
#pragma unroll
    for (int i = 0; i < kAccElems; ++i)
      sO[frow[i] * L::kTile + j * kFrag + fcol[i]] = from_f32<T>(dq[j].x[i] * a.scale);
  __syncwarp();
  store_tile_rows<T, HS>(dqkv, sQ, warp * kFrag, kFrag, t0, b, h * HS, a.row_len, a.T, lane, 32);
#else
  __trap();
#endif
}

// dK, dV: block (key tile, KV head, batch). Warp w: key group g = w % 4 (keys 16g .. 16g + 15) and
// half = w / 4, which picks the query columns it scores (32 half .. + 31) and the head dims it
// accumulates (HS/2 half .. + HS/2 - 1).
template <typename T, int HS>
__global__ void __launch_bounds__(kDkvThreads)
    tc_backward_dkv_kernel(T* dqkv, const T* dout, const T* qkv, const float* lse, const float* Dv,
                           const int32_t* segment_ids, TcShape a) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
  using L = Ld<HS>;
  using S = DkvSmem<HS>;
  constexpr int kD = HS / kFrag;           // fragments along the head dim
  constexpr int kDHalf = kD / 2;           // ... that one warp accumulates
  constexpr int kQHalf = kBr / kFrag / 2;  // query fragments one warp scores
  static_assert(kD % 2 == 0, "head dims split between two warps");
  extern __shared__ __align__(128) unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem + S::k);
  T* sV = reinterpret_cast<T*>(smem + S::v);
  T* sQ0 = reinterpret_cast<T*>(smem + S::q);  // kStages buffers each (as sLse0, sD0)
  T* sdO0 = reinterpret_cast<T*>(smem + S::dout);
  T* sPt = reinterpret_cast<T*>(smem + S::pt);    // (64 keys, 64 queries) P' transposed
  T* sdSt = reinterpret_cast<T*>(smem + S::dst);  // (64 keys, 64 queries) dS transposed
  float* sLse0 = reinterpret_cast<float*>(smem + S::lse);
  float* sD0 = reinterpret_cast<float*>(smem + S::d);
  constexpr int kStatElems = static_cast<int>(kStatBytes / sizeof(float));
  float* map = reinterpret_cast<float*>(smem + S::map);

  const int warp = threadIdx.x / 32;
  const int g = warp % kKeyGroups, half = warp / kKeyGroups;
  const int ktile = blockIdx.x;
  const int kvh = blockIdx.y, b = blockIdx.z;
  const int group = a.NH / a.NKV;
  const int s0 = ktile * kBc;
  const int32_t* seg = segment_ids ? segment_ids + std::size_t(b) * a.T : nullptr;

  fill_coord_table(map, kDkvThreads);
  load_tile<T, HS, kDkvThreads>(sK, qkv, b, s0, (a.NH + kvh) * HS, a.row_len, a.T);
  load_tile<T, HS, kDkvThreads>(sV, qkv, b, s0, (a.NH + a.NKV + kvh) * HS, a.row_len, a.T);
  __syncthreads();
  int frow[kAccElems], fcol[kAccElems];
  fragment_coords(map, frow, fcol);
  FragA<T> kf[kD];  // this warp's 16 keys of K in registers; V fragments are reloaded (register budget)
#pragma unroll
  for (int k = 0; k < kD; ++k) wmma::load_matrix_sync(kf[k], sK + g * kFrag * L::kTile + k * kFrag, L::kTile);
  const int* codes = lane_codes(map);
  Acc dk[kDHalf], dv[kDHalf];
#pragma unroll
  for (int j = 0; j < kDHalf; ++j) {
    wmma::fill_fragment(dk[j], 0.0f);
    wmma::fill_fragment(dv[j], 0.0f);
  }

  // Items: the query tiles that see this key tile (from the diagonal on), for each head of the group in order.
  auto load_q = [&](int item, int stage) {
    const auto [h, t0] = attn_tc::attention_dkv_item(item, s0, a.T, kvh, group, a.window);
    load_tile_async<T, HS, kDkvThreads>(sQ0 + stage * L::kTileElems, qkv, b, t0, h * HS, a.row_len, a.T);
    load_tile_async<T, HS, kDkvThreads>(sdO0 + stage * L::kTileElems, dout, b, t0, h * HS, a.NH * HS, a.T);
    load_row_stats(sLse0 + stage * kStatElems, sD0 + stage * kStatElems, lse, Dv, b, h, t0, a);
  };
  pipelined<L::kStages>(attn_tc::attention_dkv_items(s0, a.T, group, a.window), load_q, [&](int item, int stage) {
    {
      const auto [h, t0] = attn_tc::attention_dkv_item(item, s0, a.T, kvh, group, a.window);
      const T* sQ = sQ0 + stage * L::kTileElems;
      const T* sdO = sdO0 + stage * L::kTileElems;
      const float* sLse = sLse0 + stage * kStatElems;
      const float* sD = sD0 + stage * kStatElems;
      // Phase 1: S^T, dP^T (16 keys x 16 queries) -> P'^T, dS^T for this warp's keys and query half
#pragma unroll
      for (int nq = 0; nq < kQHalf; ++nq) {
        const int qc = half * kQHalf + nq;  // query fragment
        Acc st, dpt;
        wmma::fill_fragment(st, 0.0f);
        wmma::fill_fragment(dpt, 0.0f);
#pragma unroll
        for (int k = 0; k < kD; ++k) {
          FragBCol<T> qb, dob;  // Q^T, dO^T: element (d, query) at sQ[query * ld + d]
          FragA<T> vf;
          wmma::load_matrix_sync(qb, sQ + qc * kFrag * L::kTile + k * kFrag, L::kTile);
          wmma::mma_sync(st, kf[k], qb, st);
          wmma::load_matrix_sync(vf, sV + g * kFrag * L::kTile + k * kFrag, L::kTile);
          wmma::load_matrix_sync(dob, sdO + qc * kFrag * L::kTile + k * kFrag, L::kTile);
          wmma::mma_sync(dpt, vf, dob, dpt);
        }
        uint32_t keep = 0xffffffffu;  // bit i: element i survives dropout (rolled loop, see the forward)
        if (a.dropout_p > 0.0f) {
#pragma unroll 1
          for (int i = 0; i < kAccElems; ++i) {
            const int code = codes[i];
            if (!keep_of(a, b, h, t0 + qc * kFrag + code % kFrag, s0 + g * kFrag + code / kFrag)) keep &= ~(1u << i);
          }
        }
#pragma unroll
        for (int i = 0; i < kAccElems; ++i) {
          const int key = g * kFrag + frow[i], q = qc * kFrag + fcol[i];
          const int s = s0 + key, t = t0 + q;
          attn_tc::AttnGrad gr{0.0f, 0.0f};
          if (attn_tc::attention_visible(t, s, a.T, seg, a.window)) {
            const float p = expf(st.x[i] * a.scale - sLse[q]);
            gr = attn_tc::attention_prob_grad(p, dpt.x[i], sD[q], (keep >> i) & 1u, a.dropout_scale);
          }
          sPt[key * L::kP + q] = from_f32<T>(gr.pd);
          sdSt[key * L::kP + q] = from_f32<T>(gr.ds);
        }
      }
      __syncthreads();  // phase 2 reads both halves' query columns
                        // Phase 2: dV_g += P'^T dO, dK_g += dS^T Q over this warp's head dims
#pragma unroll
      for (int k = 0; k < kBr / kFrag; ++k) {
        FragA<T> pa, dsa;
        wmma::load_matrix_sync(pa, sPt + g * kFrag * L::kP + k * kFrag, L::kP);
        wmma::load_matrix_sync(dsa, sdSt + g * kFrag * L::kP + k * kFrag, L::kP);
#pragma unroll
        for (int jj = 0; jj < kDHalf; ++jj) {
          const int j = half * kDHalf + jj;
          FragBRow<T> dob, qb;
          wmma::load_matrix_sync(dob, sdO + k * kFrag * L::kTile + j * kFrag, L::kTile);
          wmma::mma_sync(dv[jj], pa, dob, dv[jj]);
          wmma::load_matrix_sync(qb, sQ + k * kFrag * L::kTile + j * kFrag, L::kTile);
          wmma::mma_sync(dk[jj], dsa, qb, dk[jj]);
        }
      }
    }
  });
  __syncthreads();  // everyone is done with sK, sV (reused for staging)
#pragma unroll
  for (int jj = 0; jj < kDHalf; ++jj)
#pragma unroll
    for (int i = 0; i < kAccElems; ++i) {
      const int key = g * kFrag + frow[i], d = (half * kDHalf + jj) * kFrag + fcol[i];
      sK[key * L::kTile + d] = from_f32<T>(dk[jj].x[i] * a.scale);
      sV[key * L::kTile + d] = from_f32<T>(dv[jj].x[i]);
    }
  __syncthreads();
  store_tile_rows<T, HS>(dqkv, sK, 0, kBc, s0, b, (a.NH + kvh) * HS, a.row_len, a.T, threadIdx.x, kDkvThreads);
  store_tile_rows<T, HS>(dqkv, sV, 0, kBc, s0, b, (a.NH + a.NKV + kvh) * HS, a.row_len, a.T, threadIdx.x, kDkvThreads);
#else
  __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
TcShape make_shape(int B, int T, int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset,
                   HeadSlice heads, int window) {
  TcShape a{};
  a.B = B, a.T = T, a.NH = NH, a.NKV = NKV;
  a.row_len = (NH + 2 * NKV) * HS;
  a.scale = 1.0f / std::sqrt(static_cast<float>(HS));
  a.dropout_p = dropout_p;
  a.dropout_scale = dropout_scale(dropout_p);
  a.seed = seed, a.offset = offset;
  a.drop_head0 = heads.first, a.drop_heads = heads.total > 0 ? heads.total : NH;
  a.window = window;
  return a;
}

template <typename K>
void set_smem(K kernel, std::size_t bytes) {
  GPTRAIN_CUDA_CHECK(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
}

// f(T{}, std::integral_constant<int, HS>{}) for the 16-bit storage type of t and HS 64 or 128.
template <typename F>
void dispatch_tc(DType t, int HS, F&& f) {
  auto by_hs = [&](auto tag) {
    if (HS == 64)
      f(tag, std::integral_constant<int, 64>{});
    else
      f(tag, std::integral_constant<int, 128>{});
  };
  if (t == DType::BF16)
    by_hs(__nv_bfloat16{});
  else
    by_hs(__half{});
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

bool tc_attention_supports(DType t, int HS, const void* a, const void* b, const void* c, const void* d) {
  return (t == DType::BF16 || t == DType::F16) && (HS == 64 || HS == 128) && aligned16(a) && aligned16(b) &&
         aligned16(c) && aligned16(d);
}

const char* own_attention_kernel(bool allow_tc, DType t, int HS) {
  return allow_tc && tc_attention_supports(t, HS) ? "tc" : "fma";
}

void tc_attention_forward(cudaStream_t s, DType t, void* out, float* lse, const void* qkv, const int32_t* segment_ids,
                          int B, int T, int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset,
                          HeadSlice heads, int window) {
  if (B == 0 || T == 0 || NH == 0) return;
  const TcShape a = make_shape(B, T, NH, NKV, HS, dropout_p, seed, offset, heads, window);
  const dim3 grid((T + kBr - 1) / kBr, NH, B);
  dispatch_tc(t, HS, [&](auto tag, auto hs) {
    using TT = decltype(tag);
    constexpr int kHS = decltype(hs)::value;
    auto kernel = tc_forward_kernel<TT, kHS>;
    set_smem(kernel, FwdSmem<kHS>::bytes);
    kernel<<<grid, kFwdThreads, FwdSmem<kHS>::bytes, s>>>(static_cast<TT*>(out), lse, static_cast<const TT*>(qkv),
                                                          segment_ids, a);
  });
  GPTRAIN_CUDA_CHECK_LAUNCH();
}

void tc_attention_backward(cudaStream_t s, DType t, Workspace& ws, void* dqkv, const void* dout, const void* qkv,
                           const void* out, const float* lse, const int32_t* segment_ids, int B, int T, int NH, int NKV,
                           int HS, float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads, int window) {
  if (B == 0 || T == 0 || NH == 0) return;
  const TcShape a = make_shape(B, T, NH, NKV, HS, dropout_p, seed, offset, heads, window);
  const std::size_t rows = std::size_t(B) * T * NH;
  float* Dv = static_cast<float*>(ws.get(flash_attention_backward_scratch_bytes(B, T, NH)));
  dispatch_tc(t, HS, [&](auto tag, auto hs) {
    using TT = decltype(tag);
    constexpr int kHS = decltype(hs)::value;
    constexpr int kRowWarps = 8;
    tc_rowdot_kernel<TT><<<static_cast<unsigned>((rows + kRowWarps - 1) / kRowWarps), 32 * kRowWarps, 0, s>>>(
        Dv, static_cast<const TT*>(dout), static_cast<const TT*>(out), B, T, NH, HS);
    GPTRAIN_CUDA_CHECK_LAUNCH();
    auto dq = tc_backward_dq_kernel<TT, kHS>;
    set_smem(dq, DqSmem<kHS>::bytes);
    dq<<<dim3((T + kBr - 1) / kBr, NH, B), kDqThreads, DqSmem<kHS>::bytes, s>>>(
        static_cast<TT*>(dqkv), static_cast<const TT*>(dout), static_cast<const TT*>(qkv), lse, Dv, segment_ids, a);
    GPTRAIN_CUDA_CHECK_LAUNCH();
    auto dkv = tc_backward_dkv_kernel<TT, kHS>;
    set_smem(dkv, DkvSmem<kHS>::bytes);
    dkv<<<dim3((T + kBc - 1) / kBc, NKV, B), kDkvThreads, DkvSmem<kHS>::bytes, s>>>(
        static_cast<TT*>(dqkv), static_cast<const TT*>(dout), static_cast<const TT*>(qkv), lse, Dv, segment_ids, a);
    GPTRAIN_CUDA_CHECK_LAUNCH();
  });
}

void own_attention_forward(cudaStream_t s, DType t, bool allow_tc, void* out, float* lse, const void* qkv,
                           const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                           uint64_t seed, uint64_t offset, HeadSlice heads, int window) {
  if (allow_tc && tc_attention_supports(t, HS, out, qkv))
    tc_attention_forward(s, t, out, lse, qkv, segment_ids, B, T, NH, NKV, HS, dropout_p, seed, offset, heads, window);
  else
    flash_attention_forward(s, t, out, lse, qkv, segment_ids, B, T, NH, NKV, HS, dropout_p, seed, offset, heads,
                            window);
}

void own_attention_backward(cudaStream_t s, DType t, bool allow_tc, Workspace& ws, void* dqkv, const void* dout,
                            const void* qkv, const void* out, const float* lse, const int32_t* segment_ids, int B,
                            int T, int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset,
                            HeadSlice heads, int window) {
  if (allow_tc && tc_attention_supports(t, HS, dqkv, dout, qkv, out))
    tc_attention_backward(s, t, ws, dqkv, dout, qkv, out, lse, segment_ids, B, T, NH, NKV, HS, dropout_p, seed, offset,
                          heads, window);
  else
    flash_attention_backward(s, t, ws, dqkv, dout, qkv, out, lse, segment_ids, B, T, NH, NKV, HS, dropout_p, seed,
                             offset, heads, window);
}

}  // namespace gptrain::cuda
