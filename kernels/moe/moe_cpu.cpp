// Mixture-of-experts ops on CPU (design: moe.h). Router rows are independent (row-parallel, the maths
// of moe_math.h); the dispatch plan is one sequential pass per expert in token order (cheap next to the
// expert GEMMs, and the order that makes the plan stable); permute / unpermute are row copies and
// weighted row sums in a fixed k order; the grouped GEMM is one BLAS call per expert on its contiguous
// rows; the losses are sums in double in a fixed order.
#include "kernels/moe/moe.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <vector>

#include "kernels/common/cpu_parallel.h"
#include "kernels/matmul/matmul.h"
#include "kernels/moe/moe_math.h"

namespace gptrain {

int moe_expert_capacity(int N, int E, int K, double capacity_factor) {
  // The same double arithmetic as Megatron's get_capacity(num_tokens * topk, num_experts, factor).
  return static_cast<int>(std::ceil((static_cast<double>(N) * K / E) * capacity_factor));
}

}  // namespace gptrain

namespace gptrain::cpu {

void moe_router_forward(float* probs, int32_t* experts, float* scores, const float* logits, int N, int E, int K,
                        MoeScore score, bool pre_softmax, MoeChoice choice) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * E, 1 << 14))
  for (int n = 0; n < N; ++n) {
    const std::size_t r = static_cast<std::size_t>(n);
    moe_route_row(probs + r * K, experts + r * K, scores + r * E, logits + r * E, E, K, score, pre_softmax, choice);
  }
}

void moe_router_backward(float* dlogits, const float* dprobs, const float* dscores, const float* logits,
                         const int32_t* experts, int N, int E, int K, MoeScore score, bool pre_softmax) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * E, 1 << 14))
  for (int n = 0; n < N; ++n) {
    const std::size_t r = static_cast<std::size_t>(n);
    moe_route_backward_row(dlogits + r * E, dprobs + r * K, dscores ? dscores + r * E : nullptr, logits + r * E,
                           experts + r * K, E, K, score, pre_softmax);
  }
}

void moe_input_jitter(float* out, const float* inp, std::size_t n, float eps, uint64_t seed, uint64_t offset) {
#pragma omp parallel for schedule(static) num_threads(threads_for(n, 1 << 14))
  for (std::size_t i = 0; i < n; ++i) out[i] = inp[i] * moe_jitter_factor(seed, offset + i, eps);
}

void moe_input_jitter_backward(float* dinp_acc, const float* dout, std::size_t n, float eps, uint64_t seed,
                               uint64_t offset) {
#pragma omp parallel for schedule(static) num_threads(threads_for(n, 1 << 14))
  for (std::size_t i = 0; i < n; ++i) dinp_acc[i] += dout[i] * moe_jitter_factor(seed, offset + i, eps);
}

void moe_sinkhorn_router_forward(float* probs, int32_t* experts, float* normed, const float* logits, int N, int E,
                                 int K, bool train) {
  if (N == 0) return;
  const std::size_t NE = static_cast<std::size_t>(N) * E;
  if (train) {
    std::vector<float> d0(N), d1(E, 1.0f), d1_old(E, 1.0f);
    for (float error = 1e9f; error > kMoeSinkhornTol;) {
#pragma omp parallel for schedule(static) num_threads(threads_for(NE, 1 << 14))
      for (int n = 0; n < N; ++n) d0[n] = moe_sinkhorn_d0(logits + static_cast<std::size_t>(n) * E, d1.data(), N, E);
      for (int e = 0; e < E; ++e) {
        double sum = 0.0;
        for (int n = 0; n < N; ++n) sum += d0[n] * expf(logits[static_cast<std::size_t>(n) * E + e]);
        d1[e] = 1.0f / E / (static_cast<float>(sum) + kMoeSinkhornEps);
      }
      double change = 0.0;
      for (int e = 0; e < E; ++e) change += std::fabs(d1_old[e] - d1[e]);
      error = static_cast<float>(change / E);
      d1_old = d1;
    }
    for (std::size_t i = 0; i < NE; ++i) normed[i] = d1[i % E] * expf(logits[i]) * d0[i / E];
  }
  const float* choice = train ? normed : logits;  // evaluation: the top-k of the activation = of the logits
#pragma omp parallel for schedule(static) num_threads(threads_for(NE, 1 << 14))
  for (int n = 0; n < N; ++n) {
    const std::size_t r = static_cast<std::size_t>(n);
    moe_sinkhorn_route_row(probs + r * K, experts + r * K, choice + r * E, logits + r * E, E, K);
  }
}

void moe_dispatch_plan(int32_t* dest_row, int32_t* segment_rows, const int32_t* experts, const float* probs, int N,
                       int E, int K, int capacity, MoeDropPolicy policy, bool pad_to_capacity) {
  const std::size_t NK = static_cast<std::size_t>(N) * K;
  // Choices of each expert in token order (choice i = n * K + k; a token chooses an expert at most once).
  std::vector<std::vector<int32_t>> chosen(E);
  for (std::size_t i = 0; i < NK; ++i) chosen[experts[i]].push_back(static_cast<int32_t>(i));
  const bool drops = capacity >= 0 && capacity < N;
  int32_t offset = 0;
  for (int e = 0; e < E; ++e) {
    std::vector<int32_t>& c = chosen[e];
    if (drops && static_cast<int>(c.size()) > capacity) {
      std::vector<int32_t> keep = c;
      if (policy == MoeDropPolicy::Probs) {
        // The `capacity` highest probabilities; ties keep the earlier token.
        std::stable_sort(keep.begin(), keep.end(), [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
      }
      keep.resize(capacity);
      std::sort(keep.begin(), keep.end());  // back to token order
      for (int32_t i : c) dest_row[i] = -1;
      c = keep;
    }
    for (std::size_t j = 0; j < c.size(); ++j) dest_row[c[j]] = offset + static_cast<int32_t>(j);
    const int32_t rows = pad_to_capacity ? std::min(capacity, N) : static_cast<int32_t>(c.size());
    segment_rows[e] = rows;
    offset += rows;
  }
}

void moe_permute(float* out, const float* inp, const int32_t* dest_row, int N, int K, int C, int R) {
  std::memset(out, 0, sizeof(float) * static_cast<std::size_t>(R) * C);
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * K * C, 1 << 16))
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) {
      const int32_t row = dest_row[static_cast<std::size_t>(n) * K + k];
      if (row >= 0)
        std::memcpy(out + static_cast<std::size_t>(row) * C, inp + static_cast<std::size_t>(n) * C, sizeof(float) * C);
    }
}

namespace {

// out (N, C) = sum over the kept choices k of w[n, k] * rows[dest_row[n, k]], w = probs or 1 (probs null):
// unpermute, and the backward of permute.
void gather_sum(float* out, const float* rows, const float* probs, const int32_t* dest_row, int N, int K, int C) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * K * C, 1 << 16))
  for (int n = 0; n < N; ++n) {
    float* o = out + static_cast<std::size_t>(n) * C;
    std::fill(o, o + C, 0.0f);
    for (int k = 0; k < K; ++k) {
      const std::size_t i = static_cast<std::size_t>(n) * K + k;
      if (dest_row[i] < 0) continue;
      const float p = probs ? probs[i] : 1.0f;
      const float* x = rows + static_cast<std::size_t>(dest_row[i]) * C;
#pragma omp simd
      for (int c = 0; c < C; ++c) o[c] += p * x[c];
    }
  }
}

}  // namespace

void moe_permute_backward(float* dinp, const float* dout, const int32_t* dest_row, int N, int K, int C) {
  gather_sum(dinp, dout, nullptr, dest_row, N, K, C);
}

void moe_unpermute(float* out, const float* inp, const float* probs, const int32_t* dest_row, int N, int K, int C) {
  gather_sum(out, inp, probs, dest_row, N, K, C);
}

void moe_unpermute_backward(float* dinp, float* dprobs, const float* dout, const float* inp, const float* probs,
                            const int32_t* dest_row, int N, int K, int C, int R) {
  std::memset(dinp, 0, sizeof(float) * static_cast<std::size_t>(R) * C);
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * K * C, 1 << 16))
  for (int n = 0; n < N; ++n) {
    const float* g = dout + static_cast<std::size_t>(n) * C;
    for (int k = 0; k < K; ++k) {
      const std::size_t i = static_cast<std::size_t>(n) * K + k;
      if (dest_row[i] < 0) {
        dprobs[i] = 0.0f;
        continue;
      }
      const std::size_t r = static_cast<std::size_t>(dest_row[i]) * C;
      const float p = probs[i];
      double dot = 0.0;
#pragma omp simd reduction(+ : dot)
      for (int c = 0; c < C; ++c) {
        dinp[r + c] = p * g[c];
        dot += static_cast<double>(g[c]) * inp[r + c];
      }
      dprobs[i] = static_cast<float>(dot);
    }
  }
}

void moe_grouped_matmul_forward(float* out, const float* inp, const float* weight, const int32_t* chunk_rows, int E,
                                int chunks, int IC, int OC) {
  std::size_t row = 0;
  for (int e = 0; e < E; ++e) {
    const float* w = weight + static_cast<std::size_t>(e) * OC * IC;
    for (int j = 0; j < chunks; ++j) {
      const int rows = chunk_rows[e * chunks + j];
      if (rows > 0) matmul_forward(out + row * OC, inp + row * IC, w, nullptr, rows, IC, OC);
      row += static_cast<std::size_t>(rows);
    }
  }
}

void moe_grouped_matmul_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                                 const int32_t* chunk_rows, int E, int chunks, int IC, int OC) {
  std::size_t row = 0;
  for (int e = 0; e < E; ++e) {
    const std::size_t w = static_cast<std::size_t>(e) * OC * IC, first = row;
    for (int j = 0; j < chunks; ++j) {
      const int rows = chunk_rows[e * chunks + j];
      if (rows > 0)
        matmul_backward(dinp + row * IC, nullptr, nullptr, dout + row * OC, nullptr, weight + w, rows, IC, OC,
                        /*accumulate_dinp=*/false);
      row += static_cast<std::size_t>(rows);
    }
    const int rows = static_cast<int>(row - first);
    if (rows > 0)
      matmul_backward(nullptr, dweight + w, nullptr, dout + first * OC, inp + first * IC, nullptr, rows, IC, OC, false);
  }
}

namespace {

// count[b * E + e] = tokens of sequence b (S tokens each) with e among their top-k.
std::vector<double> expert_counts(const int32_t* experts, int N, int E, int K, int seqs) {
  std::vector<double> count(static_cast<std::size_t>(seqs) * E, 0.0);
  const int S = seqs > 0 ? N / seqs : 0;
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k)
      count[static_cast<std::size_t>(n / S) * E + experts[static_cast<std::size_t>(n) * K + k]] += 1.0;
  return count;
}

}  // namespace

void moe_load_balancing_loss(float* loss, const float* scores, const int32_t* experts, int N, int E, int K, int seqs,
                             float coeff) {
  const std::vector<double> count = expert_counts(experts, N, E, K, seqs);
  const int S = N / seqs;
  double sum = 0.0;
  for (int n = 0; n < N; ++n) {
    const double* cnt = count.data() + static_cast<std::size_t>(n / S) * E;
    const float* s = scores + static_cast<std::size_t>(n) * E;
    for (int e = 0; e < E; ++e) sum += s[e] * cnt[e];
  }
  *loss = static_cast<float>(coeff * moe_balance_scale(N, E, K, seqs) * sum);
}

void moe_load_balancing_loss_backward(float* dscores, const int32_t* experts, int N, int E, int K, int seqs,
                                      float coeff_times_dloss) {
  const std::vector<double> count = expert_counts(experts, N, E, K, seqs);
  const double scale = coeff_times_dloss * moe_balance_scale(N, E, K, seqs);
  const int S = N / seqs;
  for (int n = 0; n < N; ++n)
    for (int e = 0; e < E; ++e)
      dscores[static_cast<std::size_t>(n) * E + e] =
          static_cast<float>(scale * count[static_cast<std::size_t>(n / S) * E + e]);
}

void moe_z_loss(float* loss, const float* logits, int N, int E, float coeff) {
  double sum = 0.0;
  for (int n = 0; n < N; ++n) {
    const double z = moe_logsumexp(logits + static_cast<std::size_t>(n) * E, E);
    sum += z * z;
  }
  *loss = N > 0 ? static_cast<float>(coeff * sum / N) : 0.0f;
}

void moe_z_loss_backward(float* dlogits_acc, const float* logits, int N, int E, float coeff_times_dloss) {
  // d/dl of coeff * mean(z^2) = coeff * 2 z / N * softmax(l).
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * E, 1 << 14))
  for (int n = 0; n < N; ++n) {
    const float* l = logits + static_cast<std::size_t>(n) * E;
    float* d = dlogits_acc + static_cast<std::size_t>(n) * E;
    const float z = moe_logsumexp(l, E);
    const float g = coeff_times_dloss * 2.0f * z / static_cast<float>(N);
    for (int e = 0; e < E; ++e) d[e] += g * expf(l[e] - z);
  }
}

void moe_shared_gate_forward(float* out_acc, const float* shared, const float* gate_logits, int N, int C) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * C, 1 << 16))
  for (int n = 0; n < N; ++n) {
    const std::size_t r = static_cast<std::size_t>(n) * C;
    const float g = moe_sigmoid(gate_logits[n]);
    for (int c = 0; c < C; ++c) out_acc[r + c] += g * shared[r + c];
  }
}

void moe_shared_gate_backward(float* dshared, float* dgate_logits, const float* dout, const float* shared,
                              const float* gate_logits, int N, int C) {
#pragma omp parallel for schedule(static) num_threads(threads_for(static_cast <std::size_t>(N) * C, 1 << 16))
  for (int n = 0; n < N; ++n) {
    const std::size_t r = static_cast<std::size_t>(n) * C;
    double dot = 0.0;
    for (int c = 0; c < C; ++c) dot += static_cast<double>(dout[r + c]) * shared[r + c];
    const float z = gate_logits[n], g = moe_sigmoid(z);
    dgate_logits[n] = moe_shared_gate_dlogit(z, static_cast<float>(dot));
    for (int c = 0; c < C; ++c) dshared[r + c] = g * dout[r + c];  // after the dot: dshared may alias shared
  }
}

}  // namespace gptrain::cpu
