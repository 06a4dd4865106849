// Context-parallel attention maths shared by the twins (AttentionBlock in kernels/backend.h).
// Layout: the sequence of T = 2 * cp * chunk positions is cut into 2 * cp chunks; CP rank r holds
// chunks r and 2 * cp - 1 - r (Megatron's causal load balancing: every rank gets one early and one late
// chunk, so each does the same share of the causal triangle). Local row i of rank r is chunk i / chunk
// of the two, position i % chunk inside it.
// A block (queries of one rank, keys of another) is attention restricted to the keys it holds; its
// partial result (o_b, lse_b) merges into the running one (o, lse) by
//   lse' = log(exp(lse) + exp(lse_b)),  o' = o * exp(lse - lse') + o_b * exp(lse_b - lse')
// which after all blocks gives the softmax over every visible key (attention_math.h). The backward of a
// block uses the final o and lse (the flash contract): P = exp(S - lse) is already normalized globally,
// so each block's dQ, dK, dV are its terms of the full gradient's sums.
#pragma once

#include <cmath>

#include "kernels/common/hd.h"

namespace gptrain {

// The global chunk index of local chunk `local` (0 or 1) of CP rank `rank`.
GPTRAIN_HD inline int cp_chunk_index(int local, int cp, int rank) { return local == 0 ? rank : 2 * cp - 1 - rank; }

// The global position of local row i of CP rank `rank`.
GPTRAIN_HD inline int cp_global_position(int i, int chunk, int cp, int rank) {
  return cp_chunk_index(i / chunk, cp, rank) * chunk + i % chunk;
}

// log(exp(a) + exp(b)), -inf when both are (a row that saw no key yet).
GPTRAIN_HD inline float lse_combine(float a, float b) {
  const float m = a > b ? a : b;
  if (m == -INFINITY) return -INFINITY;
  return m + logf(expf(a - m) + expf(b - m));
}

// The weight of a part with log-sum-exp `part` in a merge whose total is `total` (0 for an empty part).
GPTRAIN_HD inline float lse_weight(float part, float total) { return part == -INFINITY ? 0.0f : expf(part - total); }

}  // namespace gptrain
