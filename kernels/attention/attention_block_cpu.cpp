// Context-parallel attention blocks on CPU (attention_block.h). Per (batch, head, local query chunk) the
// visible key chunks of the block are one contiguous range of kv's rows (chunk 0, chunk 1 or both), so
// each pair is two sgemm calls on strided views, masked by global position only on the diagonal chunk.
// Backward runs over (batch, KV head) as attention_cpu.cpp does, so dK/dV accumulate without races.
#include "kernels/attention/attention_block.h"

#include <cblas.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "kernels/attention/attention_block_math.h"
#include "kernels/attention/attention_math.h"
#include "kernels/common/cpu_parallel.h"
#include "kernels/dropout/dropout.h"
#include "kernels/dropout/philox.h"

namespace gptrain::cpu {
namespace {

struct BlockLayout {
  int B, Tl, NH, NKV, HS, c;
  std::size_t ld, ldkv, ldo;  // row strides of qkv, kv, out
  const float* q(const float* qkv, int b, int h, int row) const {
    return qkv + (std::size_t(b) * Tl + row) * ld + std::size_t(h) * HS;
  }
  std::size_t kv_off(int b, int g, int row) const { return (std::size_t(b) * Tl + row) * ldkv + std::size_t(g) * HS; }
  std::size_t v_col() const { return std::size_t(NKV) * HS; }
  std::size_t o_off(int b, int h, int row) const { return (std::size_t(b) * Tl + row) * ldo + std::size_t(h) * HS; }
};

BlockLayout block_layout(int B, int NH, int NKV, int HS, AttentionBlock blk) {
  const std::size_t hs = std::size_t(HS);
  return {B,
          2 * blk.chunk,
          NH,
          NKV,
          HS,
          blk.chunk,
          (NH + 2 * std::size_t(NKV)) * hs,
          2 * std::size_t(NKV) * hs,
          std::size_t(NH) * hs};
}

// The key rows [lo, hi) of the block that query chunk qi can see (empty when lo == hi): the key chunks
// whose global index is at most the query chunk's, which are contiguous in kv.
void visible_keys(AttentionBlock blk, int qi, int* lo, int* hi) {
  const int qc = cp_chunk_index(qi, blk.cp, blk.q_rank);
  const bool k0 = cp_chunk_index(0, blk.cp, blk.kv_rank) <= qc, k1 = cp_chunk_index(1, blk.cp, blk.kv_rank) <= qc;
  *lo = k0 ? 0 : k1 ? blk.chunk : 0;
  *hi = k1 ? 2 * blk.chunk : k0 ? blk.chunk : 0;
}

// The dropout multipliers of query row (b, h, global t) over key rows [lo, hi) into m[0, hi - lo): per
// key chunk, a run of consecutive global indices.
void block_dropout(float* m, AttentionBlock blk, int lo, int hi, int b, int h, int t, int H, float p, uint64_t seed,
                   uint64_t offset) {
  const int T = 2 * blk.cp * blk.chunk;
  for (int k = lo; k < hi; k += blk.chunk) {
    const int s0 = cp_global_position(k, blk.chunk, blk.cp, blk.kv_rank);
    dropout_multipliers(m + (k - lo), std::size_t(blk.chunk), seed, offset + attention_dropout_index(b, h, t, s0, H, T),
                        p, dropout_scale(p));
  }
}

}  // namespace

void attention_kv_pack(float* kv, const float* qkv, int N, int NH, int NKV, int HS) {
  const std::size_t ld = std::size_t(NH + 2 * NKV) * HS, w = 2 * std::size_t(NKV) * HS;
  for (int n = 0; n < N; ++n) std::memcpy(kv + n * w, qkv + n * ld + std::size_t(NH) * HS, w * sizeof(float));
}

void attention_block_forward(float* out_acc, float* lse, const float* qkv, const float* kv, int B, int NH, int NKV,
                             int HS, AttentionBlock blk, bool first, float dropout_p, uint64_t seed, uint64_t offset,
                             HeadSlice heads) {
  const BlockLayout L = block_layout(B, NH, NKV, HS, blk);
  const int c = L.c, group = NH / NKV, H = heads.total > 0 ? heads.total : NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  const long long tasks = static_cast<long long>(B) * NH * 2;
  const std::size_t work = std::size_t(B) * NH * L.Tl * L.Tl * HS;
#pragma omp parallel num_threads(threads_for(work, 1 << 20))
  {
    std::vector<float> S(std::size_t(c) * L.Tl), O(std::size_t(c) * HS), M(L.Tl);
#pragma omp for schedule(dynamic)
    for (long long task = 0; task < tasks; ++task) {
      const int qi = static_cast<int>(task % 2), h = static_cast<int>((task / 2) % NH);
      const int b = static_cast<int>(task / (2LL * NH)), g = h / group;
      int lo, hi;
      visible_keys(blk, qi, &lo, &hi);
      const int keys = hi - lo, r0 = qi * c;
      float* lse_row = lse + (std::size_t(b) * NH + h) * L.Tl;
      if (keys == 0) {
        if (first) {
          for (int r = 0; r < c; ++r) {
            lse_row[r0 + r] = -INFINITY;
            std::memset(out_acc + L.o_off(b, h, r0 + r), 0, sizeof(float) * HS);
          }
        }
        continue;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c, keys, HS, scale, L.q(qkv, b, h, r0), int(L.ld),
                  kv + L.kv_off(b, g, lo), int(L.ldkv), 0.0f, S.data(), keys);
      std::vector<float> lse_blk(c);
      for (int r = 0; r < c; ++r) {
        const int t = cp_global_position(r0 + r, c, blk.cp, blk.q_rank);
        float* row = S.data() + std::size_t(r) * keys;
        float m = -INFINITY;
        for (int j = 0; j < keys; ++j) {
          if (cp_global_position(lo + j, c, blk.cp, blk.kv_rank) > t) row[j] = -INFINITY;
          m = row[j] > m ? row[j] : m;
        }
        float sum = 0.0f;
        for (int j = 0; j < keys; ++j) {
          row[j] = row[j] == -INFINITY ? 0.0f : std::exp(row[j] - m);
          sum += row[j];
        }
        const float l = m == -INFINITY ? -INFINITY : m + std::log(sum);
        lse_blk[r] = l;
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        for (int j = 0; j < keys; ++j) row[j] *= inv;
        if (dropout_p > 0.0f) {
          block_dropout(M.data(), blk, lo, hi, b, heads.first + h, t, H, dropout_p, seed, offset);
          for (int j = 0; j < keys; ++j) row[j] *= M[j];
        }
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c, HS, keys, 1.0f, S.data(), keys,
                  kv + L.kv_off(b, g, lo) + L.v_col(), int(L.ldkv), 0.0f, O.data(), HS);
      for (int r = 0; r < c; ++r) {
        float* o = out_acc + L.o_off(b, h, r0 + r);
        const float* ob = O.data() + std::size_t(r) * HS;
        if (first) {
          lse_row[r0 + r] = lse_blk[r];
          std::memcpy(o, ob, sizeof(float) * HS);
          continue;
        }
        const float old = lse_row[r0 + r], l = lse_combine(old, lse_blk[r]);
        if (l == -INFINITY) continue;
        const float wa = lse_weight(old, l), wb = lse_weight(lse_blk[r], l);
        for (int d = 0; d < HS; ++d) o[d] = o[d] * wa + ob[d] * wb;
        lse_row[r0 + r] = l;
      }
    }
  }
}

void attention_block_backward(float* dq_acc, float* dkv_acc, const float* dout, const float* qkv, const float* kv,
                              const float* out, const float* lse, int B, int NH, int NKV, int HS, AttentionBlock blk,
                              float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads) {
  const BlockLayout L = block_layout(B, NH, NKV, HS, blk);
  const int c = L.c, group = NH / NKV, H = heads.total > 0 ? heads.total : NH;
  const float scale = 1.0f / std::sqrt(static_cast<float>(HS));
  const bool drop = dropout_p > 0.0f;
  const long long tasks = static_cast<long long>(B) * NKV;
  const std::size_t work = std::size_t(B) * NH * L.Tl * L.Tl * HS;
  const int ld = int(L.ld), ldkv = int(L.ldkv), ldo = int(L.ldo);
#pragma omp parallel num_threads(threads_for(work, 1 << 20))
  {
    std::vector<float> P(std::size_t(c) * L.Tl), dP(std::size_t(c) * L.Tl), M(L.Tl), D(c);
#pragma omp for schedule(dynamic)
    for (long long task = 0; task < tasks; ++task) {
      const int g = static_cast<int>(task % NKV), b = static_cast<int>(task / NKV);
      for (int h = g * group; h < (g + 1) * group; ++h) {
        const float* lse_row = lse + (std::size_t(b) * NH + h) * L.Tl;
        for (int qi = 0; qi < 2; ++qi) {
          int lo, hi;
          visible_keys(blk, qi, &lo, &hi);
          const int keys = hi - lo, r0 = qi * c;
          if (keys == 0) continue;
          const float* Q = L.q(qkv, b, h, r0);
          const float* K = kv + L.kv_off(b, g, lo);
          const float* V = K + L.v_col();
          float* dK = dkv_acc + L.kv_off(b, g, lo);
          float* dV = dK + L.v_col();
          const float* dO = dout + L.o_off(b, h, r0);
          const float* O = out + L.o_off(b, h, r0);
          for (int r = 0; r < c; ++r) {
            float d = 0.0f;
            for (int e = 0; e < HS; ++e) d += dO[r * L.ldo + e] * O[r * L.ldo + e];
            D[r] = d;
          }
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c, keys, HS, scale, Q, ld, K, ldkv, 0.0f, P.data(),
                      keys);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, c, keys, HS, 1.0f, dO, ldo, V, ldkv, 0.0f, dP.data(),
                      keys);
          for (int r = 0; r < c; ++r) {
            const int t = cp_global_position(r0 + r, c, blk.cp, blk.q_rank);
            float* p = P.data() + std::size_t(r) * keys;
            float* dp = dP.data() + std::size_t(r) * keys;
            const float l = lse_row[r0 + r];
            if (drop) block_dropout(M.data(), blk, lo, hi, b, heads.first + h, t, H, dropout_p, seed, offset);
            for (int j = 0; j < keys; ++j) {
              const bool seen = cp_global_position(lo + j, c, blk.cp, blk.kv_rank) <= t && l != -INFINITY;
              const float pr = seen ? std::exp(p[j] - l) : 0.0f;
              const float m = drop ? M[j] : 1.0f;
              dp[j] = pr * (dp[j] * m - D[r]);
              p[j] = pr * m;
            }
          }
          // dV += P'^T dO;  dQ += scale dS K;  dK += scale dS^T Q
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, keys, HS, c, 1.0f, P.data(), keys, dO, ldo, 1.0f, dV,
                      ldkv);
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, c, HS, keys, scale, dP.data(), keys, K, ldkv, 1.0f,
                      dq_acc + L.o_off(b, h, r0), ldo);
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, keys, HS, c, scale, dP.data(), keys, Q, ld, 1.0f, dK,
                      ldkv);
        }
      }
    }
  }
}

}  // namespace gptrain::cpu
