// Causal self-attention maths shared by the twins (flash-attention contract).
// Forward per query row t of head h (KV head h / (NH / NKV)):
//   s_ts = q_t . k_s / sqrt(HS)   for allowed keys s (attention_allowed below)
//   lse_t = log sum_s exp(s_ts)   (saved, fp32; the only saved statistic)
//   p_ts = exp(s_ts - lse_t); with dropout, p'_ts = p_ts * keep_ts / (1 - p_drop)
//   o_t = sum_s p'_ts v_s
// Backward recomputes p from q, k and lse: with D_t = do_t . o_t,
//   dv_s += p'_ts do_t;  dp'_ts = do_t . v_s;  ds_ts = p_ts (dp'_ts * keep_ts / (1 - p_drop) - D_t)
//   dq_t = sum_s ds_ts k_s / sqrt(HS);  dk_s = sum_t ds_ts q_t / sqrt(HS)
// The dropout mask of probability (b, h, t, s) is philox element ((b*NH + h)*T + t)*T + s (+ offset),
// with or without a window: a key the window hides simply never uses its element.
#pragma once

#include <cstdint>

#include "kernels/common/hd.h"

namespace gptrain {

GPTRAIN_HD inline uint64_t attention_dropout_index(int b, int h, int t, int s, int NH, int T) {
  return ((static_cast<uint64_t>(b) * NH + h) * T + t) * static_cast<uint64_t>(T) + s;
}

// Sliding window (Megatron's --window-size (window, 0)): query t sees keys t - window .. t, i.e. window + 1
// keys including itself; window < 0 is the unlimited causal window. The first key the window lets t see:
GPTRAIN_HD inline int attention_window_first(int t, int window) { return window < 0 || t <= window ? 0 : t - window; }

// Whether query t may attend key s: causal, inside the window, and within its segment when segment ids
// are given.
GPTRAIN_HD inline bool attention_allowed(int t, int s, const int32_t* seg_row, int window = -1) {
  return s <= t && s >= attention_window_first(t, window) && (seg_row == nullptr || seg_row[s] == seg_row[t]);
}

}  // namespace gptrain
