// One token's router row, shared by the CPU twin and the CUDA kernel (one thread per token): scores,
// top-k, routing probabilities and their backward, fp32 throughout (Megatron computes the router in fp32).
//
// Megatron's definitions (topk_routing_with_score_function, compute_routing_scores_for_aux_loss):
//   softmax, default:       top-k of the logits, probs = softmax over those k logits
//   softmax, pre_softmax:   probs = the top-k of softmax(logits over all E), not renormalised
//   sigmoid:                top-k of sigmoid(logits), probs = s_k / (sum of the k + 1e-20) when K > 1
//   scores (aux losses):    softmax over all E, or sigmoid(l) / (sum over all E + 1e-20)
// Softmax over the top-k logits equals "softmax over all, top-k, divide by their sum" (the common factor
// cancels): that is Mixtral's routing in transformers (tests/python/moe_reference.py checks which order
// matches it).
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/backend.h"
#include "kernels/common/hd.h"
#include "kernels/dropout/philox.h"

namespace gptrain {

constexpr float kMoeSigmoidEps = 1e-20f;  // Megatron's guard in the sigmoid normalisations

GPTRAIN_HD inline float moe_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

// The shared expert's gate (--moe-shared-expert-gate): the shared output of token n is scaled by
// sigmoid(z_n), z_n = <x_n, w_gate>. Backward of that scale: dz_n = g (1 - g) <dout_n, shared_n>.
GPTRAIN_HD inline float moe_shared_gate_dlogit(float z, float dot) {
  const float g = moe_sigmoid(z);
  return g * (1.0f - g) * dot;
}

// The router input's jitter (--moe-input-jitter-eps, Megatron's Uniform(1 - eps, 1 + eps) factor): element j's
// factor from the dropout RNG's uniform u of (seed, j), low + u * (high - low) as torch's rsample.
GPTRAIN_HD inline float moe_jitter_factor(uint64_t seed, uint64_t j, float eps) {
  return (1.0f - eps) + philox_uniform(seed, j) * (2.0f * eps);
}

GPTRAIN_HD inline float moe_row_max(const float* x, int E) {
  float m = x[0];
  for (int e = 1; e < E; ++e) m = fmaxf(m, x[e]);
  return m;
}

// idx[0..K) = the K largest value(e), in decreasing order; ties go to the lower index. O(K^2 E), K small.
template <typename Value>
GPTRAIN_HD inline void moe_topk(int32_t* idx, int E, int K, Value value) {
  for (int k = 0; k < K; ++k) {
    int best = -1;
    float best_v = 0.0f;
    for (int e = 0; e < E; ++e) {
      bool taken = false;
      for (int j = 0; j < k; ++j) taken = taken || idx[j] == e;
      if (taken) continue;
      const float v = value(e);
      if (best < 0 || v > best_v) best = e, best_v = v;
    }
    idx[k] = best;
  }
}

// Group-limited routing (Megatron's group_limited_topk): bit g of the result is set when group g (experts
// [g * E / G, (g + 1) * E / G)) is one of the group_topk groups whose top-(K / group_topk) values sum
// highest (ties to the lower group; a group's top values are taken with ties to the lower expert).
template <typename Value>
GPTRAIN_HD inline uint64_t moe_group_mask(int E, int K, int G, int group_topk, Value value) {
  const int per_group = E / G, take = K / group_topk;
  float group_score[kMoeMaxGroups];
  for (int g = 0; g < G; ++g) {
    // The top `take` values of the group by repeated selection below the previous pick, in the order
    // (value descending, index ascending), so no per-expert state is needed.
    float sum = 0.0f, prev_v = 0.0f;
    int prev_e = -1;
    for (int j = 0; j < take; ++j) {
      int best = -1;
      float best_v = 0.0f;
      for (int e = g * per_group; e < (g + 1) * per_group; ++e) {
        const float v = value(e);
        const bool below_prev = prev_e < 0 || v < prev_v || (v == prev_v && e > prev_e);
        if (below_prev && (best < 0 || v > best_v)) best = e, best_v = v;
      }
      sum += best_v;
      prev_v = best_v, prev_e = best;
    }
    group_score[g] = sum;
  }
  uint64_t mask = 0;
  for (int j = 0; j < group_topk; ++j) {
    int best = -1;
    for (int g = 0; g < G; ++g)
      if (!((mask >> g) & 1u) && (best < 0 || group_score[g] > group_score[best])) best = g;
    mask |= uint64_t(1) << best;
  }
  return mask;
}

// experts (K) = the top-k of value(e), limited to the chosen groups when choice.num_groups > 0.
template <typename Value>
GPTRAIN_HD inline void moe_choose(int32_t* experts, int E, int K, const MoeChoice& choice, Value value) {
  if (choice.num_groups <= 0) {
    moe_topk(experts, E, K, value);
    return;
  }
  const uint64_t mask = moe_group_mask(E, K, choice.num_groups, choice.group_topk, value);
  const int per_group = E / choice.num_groups;
  moe_topk(experts, E, K, [&](int e) { return (mask >> (e / per_group)) & 1u ? value(e) : -INFINITY; });
}

// Forward of one row: probs (K), experts (K), scores (E) from logits (E). The choice's bias and group
// limit change which experts are chosen, never the probabilities of the chosen (Megatron).
GPTRAIN_HD inline void moe_route_row(float* probs, int32_t* experts, float* scores, const float* l, int E, int K,
                                     MoeScore score, bool pre_softmax, const MoeChoice& choice = {}) {
  if (score == MoeScore::Softmax) {
    const float m = moe_row_max(l, E);
    float z = 0.0f;
    for (int e = 0; e < E; ++e) z += expf(l[e] - m);
    for (int e = 0; e < E; ++e) scores[e] = expf(l[e] - m) / z;
    if (pre_softmax) {
      moe_choose(experts, E, K, choice, [&](int e) { return scores[e]; });
      for (int k = 0; k < K; ++k) probs[k] = scores[experts[k]];
    } else {
      moe_choose(experts, E, K, choice, [&](int e) { return l[e]; });
      const float mk = l[experts[0]];  // the largest of the k
      float zk = 0.0f;
      for (int k = 0; k < K; ++k) zk += expf(l[experts[k]] - mk);
      for (int k = 0; k < K; ++k) probs[k] = expf(l[experts[k]] - mk) / zk;
    }
  } else {
    float sum = 0.0f;
    for (int e = 0; e < E; ++e) sum += moe_sigmoid(l[e]);
    for (int e = 0; e < E; ++e) scores[e] = moe_sigmoid(l[e]) / (sum + kMoeSigmoidEps);
    const float* bias = choice.expert_bias;
    moe_choose(experts, E, K, choice, [&](int e) { return moe_sigmoid(l[e]) + (bias ? bias[e] : 0.0f); });
    float sk = 0.0f;
    for (int k = 0; k < K; ++k) sk += moe_sigmoid(l[experts[k]]);
    for (int k = 0; k < K; ++k) {
      const float s = moe_sigmoid(l[experts[k]]);
      probs[k] = K > 1 ? s / (sk + kMoeSigmoidEps) : s;
    }
  }
}

// Backward of one row: dlogits (E) = d/dlogits of <dprobs, probs> + <dscores, scores> (dscores nullable),
// the top-k selection held fixed (it is piecewise constant in the logits).
GPTRAIN_HD inline void moe_route_backward_row(float* dl, const float* dprobs, const float* dscores, const float* l,
                                              const int32_t* experts, int E, int K, MoeScore score, bool pre_softmax) {
  if (score == MoeScore::Softmax) {
    const float m = moe_row_max(l, E);
    float z = 0.0f;
    for (int e = 0; e < E; ++e) z += expf(l[e] - m);
    // Through scores = softmax(l): dl = a * (da - <a, da>), da = dscores (+ dprobs on the chosen if pre).
    float dot = 0.0f;
    for (int e = 0; e < E; ++e) dl[e] = 0.0f;
    if (dscores != nullptr)
      for (int e = 0; e < E; ++e) dl[e] = dscores[e];
    if (pre_softmax)
      for (int k = 0; k < K; ++k) dl[experts[k]] += dprobs[k];
    for (int e = 0; e < E; ++e) dot += expf(l[e] - m) / z * dl[e];
    for (int e = 0; e < E; ++e) dl[e] = expf(l[e] - m) / z * (dl[e] - dot);
    if (!pre_softmax) {
      // probs = softmax over the k chosen logits: dl_k += p_k * (dp_k - <p, dp>).
      const float mk = l[experts[0]];
      float zk = 0.0f;
      for (int k = 0; k < K; ++k) zk += expf(l[experts[k]] - mk);
      float pdot = 0.0f;
      for (int k = 0; k < K; ++k) pdot += expf(l[experts[k]] - mk) / zk * dprobs[k];
      for (int k = 0; k < K; ++k) dl[experts[k]] += expf(l[experts[k]] - mk) / zk * (dprobs[k] - pdot);
    }
  } else {
    // ds (gradient w.r.t. s = sigmoid(l)) collected in dl, then dl = ds * s * (1 - s).
    for (int e = 0; e < E; ++e) dl[e] = 0.0f;
    if (dscores != nullptr) {
      float sum = 0.0f;
      for (int e = 0; e < E; ++e) sum += moe_sigmoid(l[e]);
      const float denom = sum + kMoeSigmoidEps;
      float adot = 0.0f;  // <a, da>, a = s / denom
      for (int e = 0; e < E; ++e) adot += moe_sigmoid(l[e]) / denom * dscores[e];
      for (int e = 0; e < E; ++e) dl[e] = (dscores[e] - adot) / denom;
    }
    if (K > 1) {
      float sk = 0.0f;
      for (int k = 0; k < K; ++k) sk += moe_sigmoid(l[experts[k]]);
      const float denom = sk + kMoeSigmoidEps;
      float pdot = 0.0f;
      for (int k = 0; k < K; ++k) pdot += moe_sigmoid(l[experts[k]]) / denom * dprobs[k];
      for (int k = 0; k < K; ++k) dl[experts[k]] += (dprobs[k] - pdot) / denom;
    } else {
      dl[experts[0]] += dprobs[0];
    }
    for (int e = 0; e < E; ++e) {
      const float s = moe_sigmoid(l[e]);
      dl[e] *= s * (1.0f - s);
    }
  }
}

// Sinkhorn routing (Megatron's sinkhorn_load_balancing): in training the choice is the top-k of
// sinkhorn(logits) over all N tokens (moe_sinkhorn_*), in evaluation the top-k of the logits; the
// probabilities are the activation of the raw logits at the chosen experts, not renormalised: sigmoid
// when K = 1, softmax over all E when K > 1. Their backward is moe_route_backward_row with
// moe_sinkhorn_score(K) and pre_softmax = true (the choice held fixed, no gradient through sinkhorn).
constexpr float kMoeSinkhornEps = 1e-8f;  // Megatron's guard in the d0 / d1 normalisations
constexpr float kMoeSinkhornTol = 1e-4f;  // stop when the mean |change of d1| is below this

GPTRAIN_HD inline MoeScore moe_sinkhorn_score(int K) { return K == 1 ? MoeScore::Sigmoid : MoeScore::Softmax; }

// One row of the d0 update: 1 / (N * (sum_e d1[e] exp(l[e]) + eps)).
GPTRAIN_HD inline float moe_sinkhorn_d0(const float* l, const float* d1, int N, int E) {
  float sum = 0.0f;
  for (int e = 0; e < E; ++e) sum += d1[e] * expf(l[e]);
  return 1.0f / N / (sum + kMoeSinkhornEps);
}

// probs (K), experts (K) of one row: the top-k of `choice` (E), then the activation of l at them.
GPTRAIN_HD inline void moe_sinkhorn_route_row(float* probs, int32_t* experts, const float* choice, const float* l,
                                              int E, int K) {
  moe_topk(experts, E, K, [&](int e) { return choice[e]; });
  if (K == 1) {
    probs[0] = moe_sigmoid(l[experts[0]]);
    return;
  }
  const float m = moe_row_max(l, E);
  float z = 0.0f;
  for (int e = 0; e < E; ++e) z += expf(l[e] - m);
  for (int k = 0; k < K; ++k) probs[k] = expf(l[experts[k]] - m) / z;
}

// The load-balancing loss's constant factor E / (K * S^2 * seqs), S = N / seqs tokens per sequence
// (Megatron's num_experts / (topk * total_tokens^2), averaged over the sequences); 0 without tokens.
GPTRAIN_HD inline double moe_balance_scale(int N, int E, int K, int seqs) {
  const double S = N / seqs;
  return N > 0 ? E / (K * S * S * seqs) : 0.0;
}

// log(sum exp(l)) of one row, the z-loss's per-token term.
GPTRAIN_HD inline float moe_logsumexp(const float* l, int E) {
  const float m = moe_row_max(l, E);
  float z = 0.0f;
  for (int e = 0; e < E; ++e) z += expf(l[e] - m);
  return m + logf(z);
}

}  // namespace gptrain
