// Tile geometry and per-element maths of the tensor-core flash-attention kernels (attention_tc.cu),
// shared with their host simulation (tests/unit/kernels/test_attention_tc_tiles.cpp), which runs the
// same tile loops and the same helpers in fp32 on the CPU and is compared with the CPU twin: the
// tiling, causal and sliding-window tile skipping, masking, online softmax and dropout indexing are proven on the CPU,
// the GPU adds only the WMMA products and the 16-bit rounding of P and dS.
//
// Online softmax (FlashAttention-2) of one query row over key tiles j = 0, 1, ...:
//   m_j = max(m_{j-1}, max_s x_s)            x_s = scaled score, -inf where masked
//   c_j = exp(m_{j-1} - m_j)                 (0 while m_{j-1} = -inf: nothing accumulated yet)
//   l_j = l_{j-1} c_j + sum_s exp(x_s - m_j)
//   O_j = O_{j-1} c_j + sum_s p'_s v_s       p' = exp(x_s - m_j) with dropout applied
// and at the end o = O / l, lse = m + log(l).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/attention/attention_math.h"
#include "kernels/common/hd.h"
#include "kernels/dropout/philox.h"

namespace gptrain::attn_tc {

constexpr int kBr = 64;            // query rows per tile (forward and dQ blocks: 4 warps x 16 rows)
constexpr int kBc = 64;            // keys per tile (dK/dV blocks: 4 key groups x 16 keys)
constexpr int kHalfRow = kBc / 2;  // keys per lane in the forward softmax phase (2 lanes per row)
static_assert(kBr % 16 == 0 && kBc % 16 == 0, "tiles are whole 16x16 WMMA fragments");
static_assert(kBr == kBc, "the first query tile of key tile s0 starts at s0 (attention_first_query_tile)");

// Whether score (t, s) takes part: both positions inside the sequence and allowed by the causal
// (window and segment) mask. Padding rows/keys of a ragged last tile fail the first test.
GPTRAIN_HD inline bool attention_visible(int t, int s, int T, const int32_t* seg_row, int window = -1) {
  return t < T && s < T && attention_allowed(t, s, seg_row, window);
}

// Exclusive end of the keys that queries [t0, t0 + rows) can see (causal tile skipping).
GPTRAIN_HD inline int attention_kv_end(int t0, int rows, int T) { return t0 + rows < T ? t0 + rows : T; }

// First key tile the query tile at t0 visits (forward and dQ): the one holding the window's first key of
// its first row (0 without a window). Earlier tiles are hidden from every row of the query tile.
GPTRAIN_HD inline int attention_kv_tile_first(int t0, int window = -1) {
  return attention_window_first(t0, window) / kBc;
}

// Number of key tiles the query tile at t0 visits: tiles first .. first + n - 1, s0 = (first + i) kBc.
GPTRAIN_HD inline int attention_kv_tiles(int t0, int T, int window = -1) {
  return (attention_kv_end(t0, kBr, T) + kBc - 1) / kBc - attention_kv_tile_first(t0, window);
}

// Start of the first query tile (of kBr rows) that can see key tile [s0, s0 + kBc).
GPTRAIN_HD inline int attention_first_query_tile(int s0) { return (s0 / kBr) * kBr; }

// Exclusive end of the queries that can see key tile [s0, s0 + kBc): its last key plus the window.
GPTRAIN_HD inline int attention_query_end(int s0, int T, int window = -1) {
  return window < 0 || s0 + kBc + window >= T ? T : s0 + kBc + window;
}

// The work items of a dK/dV block (key tile s0 of KV head kvh): every query tile from the diagonal
// to the last one the window lets see the keys, for each query head of the GQA group in order (the
// fixed order makes the sums deterministic).
struct DkvItem {
  int h, t0;
};
GPTRAIN_HD inline int attention_dkv_items(int s0, int T, int group, int window = -1) {
  return group * ((attention_query_end(s0, T, window) - attention_first_query_tile(s0) + kBr - 1) / kBr);
}
GPTRAIN_HD inline DkvItem attention_dkv_item(int item, int s0, int T, int kvh, int group, int window = -1) {
  const int first = attention_first_query_tile(s0);
  const int qtiles = (attention_query_end(s0, T, window) - first + kBr - 1) / kBr;
  return DkvItem{kvh * group + item / qtiles, first + (item % qtiles) * kBr};
}

// Max of x[0, n) (-inf when all are masked).
GPTRAIN_HD inline float online_softmax_max(const float* x, int n) {
  float m = -INFINITY;
  for (int i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

// Factor c_j that rescales the row's running sum and output when its max moves from m_old to m_new.
GPTRAIN_HD inline float online_softmax_rescale(float m_old, float m_new) {
  return m_old == -INFINITY ? 0.0f : expf(m_old - m_new);
}

// Unnormalised probability exp(x - m) of a score x against the running max m (0 for masked x).
GPTRAIN_HD inline float online_softmax_prob(float x, float m) { return x == -INFINITY ? 0.0f : expf(x - m); }

GPTRAIN_HD inline float online_softmax_lse(float m, float l) { return m + logf(l); }

// Whether probability (b, h, t, s) survives attention dropout (backend.h's RNG index).
GPTRAIN_HD inline bool attention_keep(float p_drop, uint64_t seed, uint64_t offset, int b, int h, int t, int s, int NH,
                                      int T) {
  if (p_drop <= 0.0f) return true;
  return dropout_keep(philox_uniform(seed, offset + attention_dropout_index(b, h, t, s, NH, T)), p_drop);
}

// Backward of one visible score: p = exp(x - lse) recomputed, dp_raw = dO_t . v_s.
//   pd = p' (the probability with dropout, the dV weight);  ds = p (dp' - D) with dp' = dp_raw * keep / (1 - p_drop).
struct AttnGrad {
  float pd, ds;
};
GPTRAIN_HD inline AttnGrad attention_prob_grad(float p, float dp_raw, float D, bool keep, float dscale) {
  const float dp = keep ? dp_raw * dscale : 0.0f;
  return AttnGrad{keep ? p * dscale : 0.0f, p * (dp - D)};
}

}  // namespace gptrain::attn_tc
