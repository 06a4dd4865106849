// Causal attention on CPU, flash-style: per (batch, head) the queries are processed in blocks of
// kBlock rows; each block multiplies against only the keys it can see (from the sliding window's first
// key of its first row up to t1), so the causal half of Q K^T (and what the window hides) is never
// computed except on the blocks at the edges. All products are sgemm calls on strided
// views of qkv/out (no copies of Q, K or V). Forward saves lse only; backward recomputes P from Q, K
// and lse block by block (memory O(kBlock * T) per thread, never O(T^2) per head).
// Parallelism: forward over (b, h, query block); backward over (b, KV head), the query heads of a
// GQA group handled in order by the same thread, so dK/dV accumulate without races or atomics.
#include "kernels/attention/attention.h"

#include <cblas.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "kernels/attention/attention_math.h"
#include "kernels/common/cpu_exp.h"
#include "kernels/common/cpu_parallel.h"
#include "kernels/dropout/dropout.h"
#include "kernels/dropout/philox.h"

namespace gptrain::cpu {
namespace {

constexpr int kBlock = 64;

struct Layout {
  int B, T, NH, NKV, HS;
  std::size_t ld;   // row stride of qkv: (NH + 2 NKV) HS
  std::size_t ldo;  // row stride of out: NH HS
  const float* q(const float* qkv, int b, int h) const { return qkv + static_cast<std::size_t>(b) * T * ld + h * HS; }
  const float* k(const float* qkv, int b, int g) const { return q(qkv, b, NH + g); }
  const float* v(const float* qkv, int b, int g) const { return q(qkv, b, NH + NKV + g); }
  std::size_t o_off(int b, int h) const {
    return static_cast<std::size_t>(b) * T * ldo + static_cast<std::size_t>(h) * HS;
  }
};

// Masks scores of keys in other segments to -inf (keys outside [lo, t] are handled by the callers' loops).
// row[j] holds key k0 + j.
void mask_segments(float* row, int t, int k0, int lo, const int32_t* seg) {
  if (seg == nullptr) return;
  const int32_t st = seg[t];
  for (int s = lo; s <= t; ++s) row[s - k0] = seg[s] == st ? row[s - k0] : -INFINITY;
}

}  // namespace

// Scores row[0, n) of query t, row[j] holding key k0 + j -> probabilities; the visible keys are [lo, t]
// (lo >= k0: the sliding window), the others (and other segments) get 0; returns lse.
GPTRAIN_CPU_CLONES float softmax_row(float* row, int t, int k0, int lo, int n, const int32_t* seg) {
  mask_segments(row, t, k0, lo, seg);
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int s = lo; s <= t; ++s) m = row[s - k0] > m ? row[s - k0] : m;  // not fmaxf: a scalar libm call
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int s = lo; s <= t; ++s) {
    row[s - k0] = exp_simd(row[s - k0] - m);
    sum += row[s - k0];
  }
  const float inv = 1.0f / sum;
#pragma omp simd
  for (int s = lo; s <= t; ++s) row[s - k0] *= inv;
  for (int s = k0; s < lo; ++s) row[s - k0] = 0.0f;
  for (int s = t + 1; s < k0 + n; ++s) row[s - k0] = 0.0f;
  return m + std::log(sum);
}

// Backward of one row (keys as in softmax_row): p holds the scores and becomes the probabilities (times the
// dropout multipliers mult when given, for dV); dp holds dO.V^T and becomes dS = P (dP' * mult - D).
GPTRAIN_CPU_CLONES void softmax_grad_row(float* p, float* dp, const float* mult, int t, int k0, int lo, int n,
                                         const int32_t* seg, float lse, float D) {
  mask_segments(p, t, k0, lo, seg);
#pragma omp simd
  for (int s = lo; s <= t; ++s) p[s - k0] = exp_simd(p[s - k0] - lse);
  for (int s = k0; s < lo; ++s) p[s - k0] = 0.0f;
  for (int s = t + 1; s < k0 + n; ++s) p[s - k0] = 0.0f;
  if (mult != nullptr) {
#pragma omp simd
    for (int j = 0; j < n; ++j) {
      dp[j] = p[j] * (dp[j] * mult[j] - D);
      p[j] *= mult[j];
    }
  } else {
#pragma omp simd
    for (int j = 0; j < n; ++j) dp[j] = p[j] * (dp[j] - D);
  }
}

void attention_forward(float* out, float* lse, const float* qkv, const int32_t* segment_ids, int B, int T, int NH,
                       int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads, int window) {
  const int drop_heads = heads.total > 0 ? heads.total : NH;
  const Layout L{B, T, NH, NKV, HS, static_cast<std::size_t>(NH + 2 * NKV) * HS, static_cast<std::size_t>(NH) * HS};
  const int group = NH / NKV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  const float dscale = dropout_scale(dropout_p);
  const int blocks = (T + kBlock - 1) / kBlock;
  const long long tasks = static_cast<long long>(B) * NH * blocks;
  const std::size_t work = static_cast<std::size_t>(B) * NH * T * T * HS;
#pragma omp parallel num_threads(threads_for(work, 1 << 20))
  {
    std::vector<float> S(static_cast<std::size_t>(kBlock) * T);  // (rows, keys) scores, then probabilities
    std::vector<float> M(dropout_p > 0.0f ? T : 0);              // dropout multipliers of one row
#pragma omp for schedule(dynamic)
    for (long long task = 0; task < tasks; ++task) {
      const int blk = static_cast<int>(task % blocks);
      const int h = static_cast<int>((task / blocks) % NH);
      const int b = static_cast<int>(task / (static_cast<long long>(blocks) * NH));
      const int g = h / group;
      // The block sees keys [k0, t1): the window of its first row up to its last row.
      const int t0 = blk * kBlock, t1 = std::min(T, t0 + kBlock), rows = t1 - t0;
      const int k0 = attention_window_first(t0, window), keys = t1 - k0;
      const int32_t* seg = segment_ids != nullptr ? segment_ids + static_cast<std::size_t>(b) * T : nullptr;
      const float* Q = L.q(qkv, b, h);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, keys, HS, scale, Q + t0 * L.ld, static_cast<int>(L.ld),
                  L.k(qkv, b, g) + k0 * L.ld, static_cast<int>(L.ld), 0.0f, S.data(), keys);
      for (int r = 0; r < rows; ++r) {
        const int t = t0 + r, lo = attention_window_first(t, window);
        float* row = S.data() + static_cast<std::size_t>(r) * keys;
        lse[(static_cast<std::size_t>(b) * NH + h) * T + t] = softmax_row(row, t, k0, lo, keys, seg);
        if (dropout_p > 0.0f) {
          dropout_multipliers(M.data(), static_cast<std::size_t>(t - lo) + 1, seed,
                              offset + attention_dropout_index(b, heads.first + h, t, lo, drop_heads, T), dropout_p,
                              dscale);
#pragma omp simd
          for (int s = lo; s <= t; ++s) row[s - k0] *= M[static_cast<std::size_t>(s - lo)];
        }
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, HS, keys, 1.0f, S.data(), keys,
                  L.v(qkv, b, g) + k0 * L.ld, static_cast<int>(L.ld), 0.0f, out + L.o_off(b, h) + t0 * L.ldo,
                  static_cast<int>(L.ldo));
    }
  }
}

void attention_backward(float* dqkv, const float* dout, const float* qkv, const float* out, const float* lse,
                        const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                        uint64_t seed, uint64_t offset, HeadSlice heads, int window) {
  const int drop_heads = heads.total > 0 ? heads.total : NH;
  const Layout L{B, T, NH, NKV, HS, static_cast<std::size_t>(NH + 2 * NKV) * HS, static_cast<std::size_t>(NH) * HS};
  const int group = NH / NKV;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  const float dscale = dropout_scale(dropout_p);
  const bool drop = dropout_p > 0.0f;
  const int blocks = (T + kBlock - 1) / kBlock;
  const long long tasks = static_cast<long long>(B) * NKV;
  const std::size_t work = static_cast<std::size_t>(B) * NH * T * T * HS;
  const int ld = static_cast<int>(L.ld), ldo = static_cast<int>(L.ldo);
#pragma omp parallel num_threads(threads_for(work, 1 << 20))
  {
    std::vector<float> P(static_cast<std::size_t>(kBlock) * T);             // probabilities (rows, keys)
    std::vector<float> dP(static_cast<std::size_t>(kBlock) * T);            // dP, then dS in place
    std::vector<float> M(drop ? static_cast<std::size_t>(kBlock) * T : 0);  // dropout multipliers
    std::vector<float> D(kBlock);
#pragma omp for schedule(dynamic)
    for (long long task = 0; task < tasks; ++task) {
      const int g = static_cast<int>(task % NKV);
      const int b = static_cast<int>(task / NKV);
      const int32_t* seg = segment_ids != nullptr ? segment_ids + static_cast<std::size_t>(b) * T : nullptr;
      const float* K = L.k(qkv, b, g);
      const float* V = L.v(qkv, b, g);
      float* dK = dqkv + (L.k(qkv, b, g) - qkv);
      float* dV = dqkv + (L.v(qkv, b, g) - qkv);
      for (int t = 0; t < T; ++t) {
        std::memset(dK + t * L.ld, 0, sizeof(float) * HS);
        std::memset(dV + t * L.ld, 0, sizeof(float) * HS);
      }
      for (int h = g * group; h < (g + 1) * group; ++h) {
        const float* Q = L.q(qkv, b, h);
        float* dQ = dqkv + (Q - qkv);
        const float* lse_bh = lse + (static_cast<std::size_t>(b) * NH + h) * T;
        for (int blk = 0; blk < blocks; ++blk) {
          const int t0 = blk * kBlock, t1 = std::min(T, t0 + kBlock), rows = t1 - t0;
          const int k0 = attention_window_first(t0, window), keys = t1 - k0;  // keys [k0, t1) as in forward
          const float* Qb = Q + t0 * L.ld;
          const float* Kb = K + k0 * L.ld;
          float* dKb = dK + k0 * L.ld;
          float* dVb = dV + k0 * L.ld;
          const float* dOb = dout + L.o_off(b, h) + t0 * L.ldo;
          const float* Ob = out + L.o_off(b, h) + t0 * L.ldo;
          for (int r = 0; r < rows; ++r) {
            float d = 0.0f;
#pragma omp simd reduction(+ : d)
            for (int c = 0; c < HS; ++c) d += dOb[r * L.ldo + c] * Ob[r * L.ldo + c];
            D[static_cast<std::size_t>(r)] = d;
          }
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, keys, HS, scale, Qb, ld, Kb, ld, 0.0f, P.data(),
                      keys);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, keys, HS, 1.0f, dOb, ldo, V + k0 * L.ld, ld, 0.0f,
                      dP.data(), keys);
          for (int r = 0; r < rows; ++r) {
            const int t = t0 + r, lo = attention_window_first(t, window);
            float* p = P.data() + static_cast<std::size_t>(r) * keys;
            float* dp = dP.data() + static_cast<std::size_t>(r) * keys;
            float* m = nullptr;
            if (drop) {
              m = M.data() + static_cast<std::size_t>(r) * keys;
              for (int s = k0; s < lo; ++s) m[s - k0] = 0.0f;  // before the window (P is 0 there)
              dropout_multipliers(m + (lo - k0), static_cast<std::size_t>(t - lo) + 1, seed,
                                  offset + attention_dropout_index(b, heads.first + h, t, lo, drop_heads, T), dropout_p,
                                  dscale);
              for (int s = t + 1; s < t1; ++s) m[s - k0] = 0.0f;  // beyond the causal edge (P is 0 there)
            }
            softmax_grad_row(p, dp, m, t, k0, lo, keys, seg, lse_bh[t], D[static_cast<std::size_t>(r)]);
          }
          // dV (keys, HS) += P'^T (keys, rows) . dO (rows, HS)
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, keys, HS, rows, 1.0f, P.data(), keys, dOb, ldo, 1.0f,
                      dVb, ld);
          // dQ (rows, HS) = scale * dS (rows, keys) . K (keys, HS)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, HS, keys, scale, dP.data(), keys, Kb, ld, 0.0f,
                      dQ + t0 * L.ld, ld);
          // dK (keys, HS) += scale * dS^T (keys, rows) . Q (rows, HS)
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, keys, HS, rows, scale, dP.data(), keys, Qb, ld, 1.0f,
                      dKb, ld);
        }
      }
    }
  }
}

}  // namespace gptrain::cpu
