// CPU twins of the mixture-of-experts ops (kernels/moe/): the router against double formulas and by
// finite differences (through the top-k probabilities and the aux scores, every score function and order),
// the dispatch plan on hand-worked cases, permute / unpermute / grouped GEMM by finite differences, the
// load-balancing and z losses (values and gradients, down to the router logits), a whole routed layer's
// gradient to its input and router logits with capacity dropping, and the argument checks.
// The numpy / transformers reference comparisons are in test_cpu_moe_reference.cpp.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kernels/backend.h"
#include "kernels/moe/moe.h"
#include "kernel_test_util.h"
#include "moe_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

namespace {

// Router logits whose values in a row are at least ~0.3 apart, so a finite-difference step never changes
// the top-k (the selection is piecewise constant; its gradient is checked away from ties).
std::vector<float> spaced_logits(int N, int E, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> jitter(0.0f, 0.05f);
  std::vector<float> l(static_cast<std::size_t>(N) * E);
  std::vector<int> perm(E);
  for (int n = 0; n < N; ++n) {
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    for (int e = 0; e < E; ++e) l[static_cast<std::size_t>(n) * E + e] = 0.35f * perm[e] - 0.17f * E + jitter(rng);
  }
  return l;
}

const char* mode_name(MoeScore s, bool pre) {
  if (s == MoeScore::Sigmoid) return "sigmoid";
  return pre ? "softmax pre" : "softmax";
}

}  // namespace

TEST_CASE("moe router: top-k, probabilities and scores against double formulas in every mode") {
  auto be = cpu_backend();
  const int N = 37, E = 8, K = 2;
  const std::vector<float> logits = randn(static_cast<std::size_t>(N) * E, 11, 2.0f);
  for (MoeScore s : {MoeScore::Softmax, MoeScore::Sigmoid})
    for (bool pre : {false, true}) {
      INFO(mode_name(s, pre));
      const Routing r = route(*be, logits, N, E, K, s, pre);
      for (int n = 0; n < N; ++n) {
        const float* l = logits.data() + n * E;
        std::vector<int> order(E);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return l[a] > l[b]; });
        double z = 0, zs = 0, zk = 0, sk = 0;
        for (int e = 0; e < E; ++e) z += std::exp(static_cast<double>(l[e])), zs += 1 / (1 + std::exp(-double(l[e])));
        for (int k = 0; k < K; ++k)
          zk += std::exp(static_cast<double>(l[order[k]])), sk += 1 / (1 + std::exp(-double(l[order[k]])));
        for (int k = 0; k < K; ++k) {
          REQUIRE(r.experts[n * K + k] == order[k]);  // every score function is monotonic in the logit
          const double lk = l[order[k]], sig = 1 / (1 + std::exp(-lk));
          const double want = s == MoeScore::Sigmoid ? sig / sk : (pre ? std::exp(lk) / z : std::exp(lk) / zk);
          REQUIRE(r.probs[n * K + k] == Approx(want).epsilon(1e-5));
        }
        for (int e = 0; e < E; ++e) {
          const double le = l[e];
          const double want = s == MoeScore::Sigmoid ? 1 / (1 + std::exp(-le)) / zs : std::exp(le) / z;
          REQUIRE(r.scores[n * E + e] == Approx(want).epsilon(1e-5));
        }
      }
    }
  // K = 1 sigmoid is not normalised (Megatron): the probability is the sigmoid itself.
  const Routing one = route(*be, logits, N, E, 1, MoeScore::Sigmoid, false);
  REQUIRE(one.probs[0] == Approx(1 / (1 + std::exp(-double(logits[one.experts[0]])))).epsilon(1e-6));
}

TEST_CASE("moe router: gradient through the top-k probabilities and the aux scores by finite differences") {
  auto be = cpu_backend();
  const int N = 9, E = 6;
  const std::vector<float> bias = randn(E, 33);
  for (int K : {1, 2, 3})
    for (MoeScore s : {MoeScore::Softmax, MoeScore::Sigmoid})
      for (bool pre : {false, true})
        for (bool modified : {false, true}) {
          // The expert bias (sigmoid only) and a group limit change the choice; the gradient holds it fixed.
          MoeChoice choice;
          if (modified) choice = {s == MoeScore::Sigmoid ? bias.data() : nullptr, 3, K == 3 ? 2 : 1};
          // spaced_logits keeps the experts' logits apart, not the groups' sums: draw until no nearby point
          // changes the choice (the finite differences below must not cross a tie).
          auto stable = [&](const std::vector<float>& l) {
            const Routing base = route(*be, l, N, E, K, s, pre, choice);
            for (uint32_t t = 0; t < 8; ++t) {
              std::vector<float> q = l;
              const std::vector<float> d = randn(q.size(), 900 + t);
              for (std::size_t i = 0; i < q.size(); ++i) q[i] += 0.03f * d[i];
              if (route(*be, q, N, E, K, s, pre, choice).experts != base.experts) return false;
            }
            return true;
          };
          uint32_t seed = 20 + K;
          std::vector<float> logits = spaced_logits(N, E, seed);
          while (modified && !stable(logits)) logits = spaced_logits(N, E, ++seed);
          const auto rp = randn(static_cast<std::size_t>(N) * K, 31), rs = randn(static_cast<std::size_t>(N) * E, 32);
          const Routing r = route(*be, logits, N, E, K, s, pre, choice);
          for (bool with_scores : {false, true}) {
            std::vector<float> dl(static_cast<std::size_t>(N) * E);
            be->moe_router_backward(dl.data(), rp.data(), with_scores ? rs.data() : nullptr, logits.data(),
                                    r.experts.data(), N, E, K, s, pre);
            if (K == 1 && s == MoeScore::Softmax && !pre && !with_scores) {
              // A softmax over one logit is 1 whatever the logit: no gradient at all.
              REQUIRE(std::all_of(dl.begin(), dl.end(), [](float v) { return v == 0.0f; }));
              continue;
            }
            auto loss = [&] {
              const Routing q = route(*be, logits, N, E, K, s, pre, choice);
              REQUIRE(q.experts == r.experts);  // the step never crosses a tie
              return dot(q.probs, rp) + (with_scores ? dot(q.scores, rs) : 0.0);
            };
            INFO("K=" << K << " " << mode_name(s, pre) << (with_scores ? " + scores" : "")
                      << (modified ? " with bias / groups" : ""));
            check_gradient("router", loss, logits, dl, 64, 1e-2f, 2e-2);
          }
        }
}

TEST_CASE("moe router: the expert bias and group limit are checked") {
  auto be = cpu_backend();
  std::vector<float> buf(64), bias(8);
  std::vector<int32_t> ibuf(16);
  auto run = [&](MoeScore s, MoeChoice c) {
    be->moe_router_forward(buf.data(), ibuf.data(), buf.data() + 16, buf.data() + 32, 2, 8, 2, s, false, c);
  };
  REQUIRE_THROWS_WITH(run(MoeScore::Softmax, {bias.data(), 0, 0}),
                      Catch::Contains("moe_router_forward: the expert bias needs the sigmoid score"));
  REQUIRE_THROWS_WITH(run(MoeScore::Sigmoid, {nullptr, 3, 1}), Catch::Contains("num_groups=3 must divide E=8"));
  REQUIRE_THROWS_WITH(run(MoeScore::Sigmoid, {nullptr, 8, 1}),
                      Catch::Contains("group_topk=1 must be in [1, min(num_groups=8, K=2)]"));
  REQUIRE_NOTHROW(run(MoeScore::Sigmoid, {bias.data(), 4, 2}));
}

TEST_CASE("moe dispatch plan: stable expert-major layout, capacity, drop policies, padding") {
  auto be = cpu_backend();
  // 6 tokens, top-1 over 2 experts: expert 0 is chosen by tokens 0, 2, 3, 5 and expert 1 by 1, 4.
  const int N = 6, E = 2, K = 1;
  const std::vector<int32_t> experts{0, 1, 0, 0, 1, 0};
  const std::vector<float> probs{0.6f, 0.7f, 0.9f, 0.55f, 0.8f, 0.9f};
  std::vector<int32_t> dest(N), seg(E);
  be->moe_dispatch_plan(dest.data(), seg.data(), experts.data(), probs.data(), N, E, K, -1, MoeDropPolicy::Probs,
                        false);
  REQUIRE(seg == std::vector<int32_t>{4, 2});
  REQUIRE(dest == std::vector<int32_t>{0, 4, 1, 2, 5, 3});  // tokens in order inside each expert
  // capacity 2 (= ceil(6 * 1 / 2 * 2/3)): expert 0 keeps its two most probable (tokens 2, 5; tie at 0.9
  // would keep the earlier) or its two first (tokens 0, 2).
  REQUIRE(moe_expert_capacity(N, E, K, 2.0 / 3.0) == 2);
  be->moe_dispatch_plan(dest.data(), seg.data(), experts.data(), probs.data(), N, E, K, 2, MoeDropPolicy::Probs, false);
  REQUIRE(seg == std::vector<int32_t>{2, 2});
  REQUIRE(dest == std::vector<int32_t>{-1, 2, 0, -1, 3, 1});
  be->moe_dispatch_plan(dest.data(), seg.data(), experts.data(), probs.data(), N, E, K, 2, MoeDropPolicy::Position,
                        false);
  REQUIRE(dest == std::vector<int32_t>{0, 2, 1, -1, 3, -1});
  // Padding to capacity 3: every segment 3 rows, the kept tokens first.
  be->moe_dispatch_plan(dest.data(), seg.data(), experts.data(), probs.data(), N, E, K, 3, MoeDropPolicy::Position,
                        true);
  REQUIRE(seg == std::vector<int32_t>{3, 3});
  REQUIRE(dest == std::vector<int32_t>{0, 3, 1, 2, 4, -1});
  // A capacity of at least N drops nothing (Megatron); padding then gives N rows per expert.
  be->moe_dispatch_plan(dest.data(), seg.data(), experts.data(), probs.data(), N, E, K, 7, MoeDropPolicy::Probs, true);
  REQUIRE(seg == std::vector<int32_t>{6, 6});
  REQUIRE(dest == std::vector<int32_t>{0, 6, 1, 2, 7, 3});
}

TEST_CASE("moe permute / unpermute: round trip, gradients by finite differences, dropped choices") {
  auto be = cpu_backend();
  const int N = 11, E = 4, K = 2, C = 5;
  const Routing r = route(*be, spaced_logits(N, E, 3), N, E, K, MoeScore::Softmax, false);
  for (int capacity : {-1, 4}) {
    for (bool pad : {false, true}) {
      if (pad && capacity < 0) continue;
      INFO("capacity=" << capacity << " pad=" << pad);
      std::vector<int32_t> dest(N * K), seg(E);
      be->moe_dispatch_plan(dest.data(), seg.data(), r.experts.data(), r.probs.data(), N, E, K, capacity,
                            MoeDropPolicy::Probs, pad);
      const int R = std::accumulate(seg.begin(), seg.end(), 0);
      REQUIRE((capacity < 0 ? R == N * K : R <= E * capacity));
      std::vector<float> x = randn(static_cast<std::size_t>(N) * C, 5), probs = r.probs;
      std::vector<float> xp(static_cast<std::size_t>(R) * C), y(static_cast<std::size_t>(N) * C);
      be->moe_permute(xp.data(), x.data(), dest.data(), N, K, C, R);
      be->moe_unpermute(y.data(), xp.data(), probs.data(), dest.data(), N, K, C);
      // Unpermuting the permuted rows gives each token times the sum of its kept probabilities.
      for (int n = 0; n < N; ++n) {
        double kept = 0;
        for (int k = 0; k < K; ++k) kept += dest[n * K + k] >= 0 ? probs[n * K + k] : 0.0;
        for (int c = 0; c < C; ++c) REQUIRE(y[n * C + c] == Approx(kept * x[n * C + c]).margin(1e-6));
      }
      // permute backward (a linear map's adjoint) and unpermute backward by finite differences.
      const auto rp = randn(xp.size(), 6), ry = randn(y.size(), 7);
      std::vector<float> dx(x.size());
      be->moe_permute_backward(dx.data(), rp.data(), dest.data(), N, K, C);
      auto permute_loss = [&] {
        std::vector<float> o(xp.size());
        be->moe_permute(o.data(), x.data(), dest.data(), N, K, C, R);
        return dot(o, rp);
      };
      check_gradient("permute", permute_loss, x, dx, 64, 1e-2f, 1e-3);
      std::vector<float> dxp(xp.size(), 7.0f), dprobs(probs.size(), 7.0f);
      be->moe_unpermute_backward(dxp.data(), dprobs.data(), ry.data(), xp.data(), probs.data(), dest.data(), N, K, C,
                                 R);
      auto unpermute_loss = [&] {
        std::vector<float> o(y.size());
        be->moe_unpermute(o.data(), xp.data(), probs.data(), dest.data(), N, K, C);
        return dot(o, ry);
      };
      check_gradient("unpermute input", unpermute_loss, xp, dxp, 64, 1e-2f, 1e-3);
      check_gradient("unpermute probs", unpermute_loss, probs, dprobs, 64, 1e-2f, 1e-3);
      for (int i = 0; i < N * K; ++i)
        if (dest[i] < 0) REQUIRE(dprobs[i] == 0.0f);
    }
  }
}

TEST_CASE("moe grouped GEMM: each segment times its expert's weight, backward by finite differences") {
  auto be = cpu_backend();
  const int E = 3, IC = 6, OC = 4;
  const std::vector<int32_t> seg{3, 0, 5};  // an expert with no rows is skipped
  const int R = 8;
  std::vector<float> x = randn(static_cast<std::size_t>(R) * IC, 41),
                     w = randn(static_cast<std::size_t>(E) * OC * IC, 42);
  std::vector<float> y(static_cast<std::size_t>(R) * OC);
  be->moe_grouped_matmul_forward(y.data(), x.data(), w.data(), seg.data(), E, 1, IC, OC);
  for (int r = 0, e = 0, end = seg[0]; r < R; ++r) {
    while (r >= end) end += seg[++e];
    for (int o = 0; o < OC; ++o) {
      double s = 0;
      for (int i = 0; i < IC; ++i) s += static_cast<double>(x[r * IC + i]) * w[(e * OC + o) * IC + i];
      REQUIRE(y[r * OC + o] == Approx(s).margin(1e-5));
    }
  }
  const auto ry = randn(y.size(), 43);
  std::vector<float> dx(x.size()), dw(w.size(), 0.5f);
  be->moe_grouped_matmul_backward(dx.data(), dw.data(), ry.data(), x.data(), w.data(), seg.data(), E, 1, IC, OC);
  for (int i = OC * IC; i < 2 * OC * IC; ++i) REQUIRE(dw[i] == 0.5f);  // expert 1: nothing added
  for (float& v : dw) v -= 0.5f;                                       // dweight accumulates (+=)
  auto loss = [&] {
    std::vector<float> o(y.size());
    be->moe_grouped_matmul_forward(o.data(), x.data(), w.data(), seg.data(), E, 1, IC, OC);
    return dot(o, ry);
  };
  check_gradient("grouped gemm input", loss, x, dx, 64, 1e-2f, 1e-3);
  check_gradient("grouped gemm weight", loss, w, dw, 64, 1e-2f, 1e-3);
}

TEST_CASE("moe grouped GEMM in chunks: a chunk's rows are those of its own GEMM, backward by finite differences") {
  auto be = cpu_backend();
  const int E = 2, chunks = 3, IC = 40, OC = 24;
  // Expert 0: chunks of 5, 0 and 11 rows; expert 1: 8, 3, 1 (a BLAS may round a row differently in a
  // GEMM of other row counts, so only a GEMM per chunk gives each chunk's own bits).
  const std::vector<int32_t> chunk_rows{5, 0, 11, 8, 3, 1};
  const int R = std::accumulate(chunk_rows.begin(), chunk_rows.end(), 0);
  std::vector<float> x = randn(static_cast<std::size_t>(R) * IC, 51),
                     w = randn(static_cast<std::size_t>(E) * OC * IC, 52);
  std::vector<float> y(static_cast<std::size_t>(R) * OC);
  be->moe_grouped_matmul_forward(y.data(), x.data(), w.data(), chunk_rows.data(), E, chunks, IC, OC);
  // Each chunk alone, as one expert of one chunk: the same bits.
  int row = 0;
  for (int i = 0; i < E * chunks; ++i) {
    const int n = chunk_rows[i];
    if (n == 0) continue;
    std::vector<float> alone(static_cast<std::size_t>(n) * OC);
    be->moe_grouped_matmul_forward(alone.data(), x.data() + row * IC, w.data() + (i / chunks) * OC * IC, &n, 1, 1, IC,
                                   OC);
    INFO("chunk " << i);
    REQUIRE(std::equal(alone.begin(), alone.end(), y.begin() + row * OC));
    row += n;
  }
  // dinp per chunk (bitwise that chunk's own backward), dweight the expert's whole gradient.
  const auto ry = randn(y.size(), 53);
  std::vector<float> dx(x.size()), dw(w.size(), 0.0f), dx_whole(x.size()), dw_whole(w.size(), 0.0f);
  be->moe_grouped_matmul_backward(dx.data(), dw.data(), ry.data(), x.data(), w.data(), chunk_rows.data(), E, chunks, IC,
                                  OC);
  row = 0;
  for (int i = 0; i < E * chunks; ++i) {
    const int n = chunk_rows[i];
    if (n == 0) continue;
    std::vector<float> alone(static_cast<std::size_t>(n) * IC), dw_alone(static_cast<std::size_t>(OC) * IC);
    be->moe_grouped_matmul_backward(alone.data(), dw_alone.data(), ry.data() + row * OC, x.data() + row * IC,
                                    w.data() + (i / chunks) * OC * IC, &n, 1, 1, IC, OC);
    INFO("chunk " << i);
    REQUIRE(std::equal(alone.begin(), alone.end(), dx.begin() + row * IC));
    row += n;
  }
  const std::vector<int32_t> segments{16, 12};  // the same rows as one chunk per expert
  be->moe_grouped_matmul_backward(dx_whole.data(), dw_whole.data(), ry.data(), x.data(), w.data(), segments.data(), E,
                                  1, IC, OC);
  REQUIRE(dw == dw_whole);  // one weight-gradient GEMM per expert either way
  auto loss = [&] {
    std::vector<float> o(y.size());
    be->moe_grouped_matmul_forward(o.data(), x.data(), w.data(), chunk_rows.data(), E, chunks, IC, OC);
    return dot(o, ry);
  };
  check_gradient("chunked grouped gemm input", loss, x, dx, 64, 1e-2f, 1e-3);
  check_gradient("chunked grouped gemm weight", loss, w, dw, 64, 1e-2f, 1e-3);
}

TEST_CASE("moe shared-expert gate: out += sigmoid(z) * shared, backward by finite differences, in place") {
  auto be = cpu_backend();
  const int N = 7, C = 5;
  std::vector<float> shared = randn(static_cast<std::size_t>(N) * C, 81), z = randn(N, 82, 2.0f);
  const std::vector<float> base = randn(shared.size(), 83), ry = randn(shared.size(), 84);
  std::vector<float> out = base;
  be->moe_shared_gate_forward(out.data(), shared.data(), z.data(), N, C);
  for (int n = 0; n < N; ++n)
    for (int c = 0; c < C; ++c)
      REQUIRE(out[n * C + c] ==
              Approx(base[n * C + c] + shared[n * C + c] / (1.0 + std::exp(-double(z[n])))).margin(1e-6));
  auto loss = [&] {
    std::vector<float> o = base;
    be->moe_shared_gate_forward(o.data(), shared.data(), z.data(), N, C);
    return dot(o, ry);
  };
  std::vector<float> dshared(shared.size(), 7.0f), dz(N, 7.0f);
  be->moe_shared_gate_backward(dshared.data(), dz.data(), ry.data(), shared.data(), z.data(), N, C);
  check_gradient("shared gate input", loss, shared, dshared, 64, 1e-2f, 1e-3);
  check_gradient("shared gate logits", loss, z, dz, 64, 1e-2f, 1e-3);
  // dshared may alias shared: the dots are taken first.
  std::vector<float> inplace = shared, dz2(N);
  be->moe_shared_gate_backward(inplace.data(), dz2.data(), ry.data(), inplace.data(), z.data(), N, C);
  REQUIRE(inplace == dshared);
  REQUIRE(dz2 == dz);
}

TEST_CASE("moe losses: load balancing (aux and per sequence) and z-loss, values and gradients to the logits") {
  auto be = cpu_backend();
  const int B = 3, S = 8, N = B * S, E = 6, K = 2;
  const float coeff = 0.1f;
  for (MoeScore s : {MoeScore::Softmax, MoeScore::Sigmoid}) {
    std::vector<float> logits = spaced_logits(N, E, 51);
    const Routing r = route(*be, logits, N, E, K, s, false);
    // Uniform scores and counts give the loss its balanced value coeff (Megatron's normalisation).
    std::vector<float> uniform(static_cast<std::size_t>(N) * E, 1.0f / E);
    std::vector<int32_t> round_robin(static_cast<std::size_t>(N) * K);
    for (int i = 0; i < N * K; ++i) round_robin[i] = i % E;
    float loss = 0;
    be->moe_load_balancing_loss(&loss, uniform.data(), round_robin.data(), N, E, K, 1, coeff);
    REQUIRE(loss == Approx(coeff).epsilon(1e-6));
    for (int seqs : {1, B}) {
      INFO(mode_name(s, false) << " seqs=" << seqs);
      // Independent per-sequence formula.
      double want = 0;
      for (int b = 0; b < seqs; ++b) {
        const int T = N / seqs;
        for (int e = 0; e < E; ++e) {
          double p = 0, f = 0;
          for (int t = 0; t < T; ++t) {
            const int n = b * T + t;
            p += r.scores[n * E + e] / T;
            for (int k = 0; k < K; ++k) f += r.experts[n * K + k] == e ? 1.0 / (T * K) : 0.0;
          }
          want += coeff * E * p * f / seqs;
        }
      }
      be->moe_load_balancing_loss(&loss, r.scores.data(), r.experts.data(), N, E, K, seqs, coeff);
      REQUIRE(loss == Approx(want).epsilon(1e-5));
      // Gradient of the loss to the router logits: load-balancing backward into dscores, then the router.
      std::vector<float> dscores(static_cast<std::size_t>(N) * E), zeros(static_cast<std::size_t>(N) * K, 0.0f);
      std::vector<float> dl(static_cast<std::size_t>(N) * E);
      be->moe_load_balancing_loss_backward(dscores.data(), r.experts.data(), N, E, K, seqs, coeff);
      be->moe_router_backward(dl.data(), zeros.data(), dscores.data(), logits.data(), r.experts.data(), N, E, K, s,
                              false);
      auto aux = [&] {
        const Routing q = route(*be, logits, N, E, K, s, false);
        REQUIRE(q.experts == r.experts);
        float v = 0;
        be->moe_load_balancing_loss(&v, q.scores.data(), q.experts.data(), N, E, K, seqs, coeff);
        return static_cast<double>(v);
      };
      check_gradient("load balancing loss -> logits", aux, logits, dl, 64, 1e-2f, 2e-2);
    }
  }
  // z-loss = coeff * mean(logsumexp^2), gradient accumulated onto dlogits.
  std::vector<float> logits = randn(static_cast<std::size_t>(N) * E, 61, 2.0f);
  double want = 0;
  for (int n = 0; n < N; ++n) {
    double z = 0;
    for (int e = 0; e < E; ++e) z += std::exp(static_cast<double>(logits[n * E + e]));
    want += std::log(z) * std::log(z) / N;
  }
  float z = 0;
  be->moe_z_loss(&z, logits.data(), N, E, 1e-2f);
  REQUIRE(z == Approx(1e-2 * want).epsilon(1e-5));
  std::vector<float> dl(logits.size(), 0.25f);
  be->moe_z_loss_backward(dl.data(), logits.data(), N, E, 1e-2f);
  for (float& v : dl) v -= 0.25f;
  auto zl = [&] {
    float v = 0;
    be->moe_z_loss(&v, logits.data(), N, E, 1e-2f);
    return static_cast<double>(v);
  };
  check_gradient("z-loss", zl, logits, dl, 64, 1e-2f, 2e-2);
}

// logits -> router -> plan (capacity, position policy) -> permute -> per-expert GEMM -> unpermute: the
// gradient reaching the layer input and the router logits, against finite differences of the whole chain.
TEST_CASE("moe routed layer: input and router-logit gradients through top-k and dropping by finite differences") {
  auto be = cpu_backend();
  const int N = 10, E = 4, K = 2, C = 5, OC = 3;
  std::vector<float> logits = spaced_logits(N, E, 71), x = randn(static_cast<std::size_t>(N) * C, 72);
  const std::vector<float> w = randn(static_cast<std::size_t>(E) * OC * C, 73);
  const auto ry = randn(static_cast<std::size_t>(N) * OC, 74);
  const int capacity = moe_expert_capacity(N, E, K, 0.75);  // 4 of the 5 a balanced expert gets
  for (MoeScore s : {MoeScore::Softmax, MoeScore::Sigmoid}) {
    struct Fwd {
      Routing r;
      std::vector<int32_t> dest, seg;
      std::vector<float> xp, hp, y;
      int R = 0;
    };
    auto forward = [&](Fwd& f) {
      f.r = route(*be, logits, N, E, K, s, false);
      f.dest.assign(N * K, 0), f.seg.assign(E, 0);
      be->moe_dispatch_plan(f.dest.data(), f.seg.data(), f.r.experts.data(), f.r.probs.data(), N, E, K, capacity,
                            MoeDropPolicy::Position, false);
      f.R = std::accumulate(f.seg.begin(), f.seg.end(), 0);
      f.xp.assign(static_cast<std::size_t>(f.R) * C, 0), f.hp.assign(static_cast<std::size_t>(f.R) * OC, 0);
      f.y.assign(static_cast<std::size_t>(N) * OC, 0);
      be->moe_permute(f.xp.data(), x.data(), f.dest.data(), N, K, C, f.R);
      be->moe_grouped_matmul_forward(f.hp.data(), f.xp.data(), w.data(), f.seg.data(), E, 1, C, OC);
      be->moe_unpermute(f.y.data(), f.hp.data(), f.r.probs.data(), f.dest.data(), N, K, OC);
      return dot(f.y, ry);
    };
    Fwd f;
    forward(f);
    REQUIRE(std::count(f.dest.begin(), f.dest.end(), -1) > 0);  // the capacity drops some choices
    std::vector<float> dhp(f.hp.size()), dprobs(N * K), dxp(f.xp.size()), dw(w.size(), 0.0f), dx(x.size()),
        dl(logits.size());
    be->moe_unpermute_backward(dhp.data(), dprobs.data(), ry.data(), f.hp.data(), f.r.probs.data(), f.dest.data(), N, K,
                               OC, f.R);
    be->moe_grouped_matmul_backward(dxp.data(), dw.data(), dhp.data(), f.xp.data(), w.data(), f.seg.data(), E, 1, C,
                                    OC);
    be->moe_permute_backward(dx.data(), dxp.data(), f.dest.data(), N, K, C);
    be->moe_router_backward(dl.data(), dprobs.data(), nullptr, logits.data(), f.r.experts.data(), N, E, K, s, false);
    auto loss = [&] {
      Fwd g;
      const double v = forward(g);
      REQUIRE(g.dest == f.dest);
      return v;
    };
    INFO(mode_name(s, false));
    check_gradient("routed layer input", loss, x, dx, 64, 1e-2f, 1e-3);
    check_gradient("routed layer router logits", loss, logits, dl, 64, 1e-2f, 2e-2);
  }
}

TEST_CASE("moe ops: argument checks name the op and the values") {
  auto be = cpu_backend();
  std::vector<float> buf(64);
  std::vector<int32_t> ibuf(64);
  REQUIRE_THROWS_WITH(
      be->moe_router_forward(buf.data(), ibuf.data(), buf.data(), buf.data(), 2, 4, 5, MoeScore::Softmax, false),
      Catch::Contains("moe_router_forward: top-k K=5 must be in [1, E=4]"));
  REQUIRE_THROWS_WITH(be->moe_load_balancing_loss(buf.data(), buf.data(), ibuf.data(), 10, 4, 2, 3, 0.1f),
                      Catch::Contains("N=10 tokens do not split into seqs=3 sequences"));
  REQUIRE_THROWS_WITH(
      be->moe_dispatch_plan(ibuf.data(), ibuf.data(), ibuf.data(), buf.data(), 4, 4, 2, -1, MoeDropPolicy::Probs, true),
      Catch::Contains("padding to capacity needs a capacity"));
  const std::vector<int32_t> bad{2, -1};
  REQUIRE_THROWS_WITH(be->moe_grouped_matmul_forward(buf.data(), buf.data(), buf.data(), bad.data(), 1, 2, 2, 2),
                      Catch::Contains("chunk_rows[1]=-1 (expert 0, chunk 1) must not be negative"));
}
