// mpi_moe_dispatch_check: an MoE layer's expert part run with expert parallelism (the experts split
// over the EP group, tokens moved by the token dispatcher) against the same layer on one rank.
// Every rank routes its own tokens (router, per-rank capacity plan, permute), the dispatcher moves the
// rows to their experts' ranks, the experts (fc1, GELU, fc2, computed row by row) run there, the rows come
// back and are combined with the routing weights; then the backward through the same path. The
// reference computes every rank's tokens with all E experts in one process (regenerated inputs).
// Checked: outputs, input and routing-weight gradients bitwise; the expert weight gradients (summed over
// the ranks' tokens in another order) within 1e-6 relative; for both dispatcher types, dropless, with a
// capacity factor (both drop policies) and padded to capacity; on the world as one EP group and, on 4
// ranks, as two EP 2 groups of a grid. Exit 0 = all checks passed.
#include "core/common/error.h"
#include "core/common/log.h"
#include "kernels/moe/moe.h"
#include "parallel/comm/grid_comms.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/launch/mpi_runtime.h"
#include "parallel/moe/token_dispatcher.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {
using namespace gptrain;
using namespace gptrain::parallel;
using Vec = std::vector<float>;

constexpr int kN = 24, kC = 8, kF = 12, kK = 2;

Vec random_vec(std::size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  Vec v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Case {
  int E;
  double capacity_factor;  // <= 0: dropless
  MoeDropPolicy policy;
  bool pad;
};

// One rank's data: tokens, router logits (skewed towards expert 0 so capacities bind), output gradient.
struct Tokens {
  Vec x, logits, dy;
};
Tokens tokens_of(int rank, int E) {
  Tokens t{random_vec(kN * kC, 100 + rank), random_vec(kN * E, 200 + rank), random_vec(kN * kC, 300 + rank)};
  for (int n = 0; n < kN; ++n) t.logits[n * E] += 1.0f;
  return t;
}

// Routing of one rank's tokens: what stays on the rank whatever the expert placement.
struct Routed {
  Vec probs;
  std::vector<int32_t> experts, dest, seg;
  int R = 0;
};
Routed route(Backend& be, const Tokens& t, const Case& c) {
  Routed r;
  r.probs.resize(kN * kK);
  r.experts.resize(kN * kK);
  Vec scores(kN * c.E);
  be.moe_router_forward(r.probs.data(), r.experts.data(), scores.data(), t.logits.data(), kN, c.E, kK,
                        MoeScore::Softmax, false);
  r.dest.resize(kN * kK);
  r.seg.resize(c.E);
  const int cap = c.capacity_factor > 0 ? moe_expert_capacity(kN, c.E, kK, c.capacity_factor) : -1;
  be.moe_dispatch_plan(r.dest.data(), r.seg.data(), r.experts.data(), r.probs.data(), kN, c.E, kK, cap, c.policy,
                       c.pad);
  for (int32_t s : r.seg) r.R += s;
  return r;
}

struct Weights {
  Vec w1, w2;  // (E, F, C), (E, C, F)
};

// An expert GEMM row by row, each dot product summed in one fixed order: a row's result does not depend on
// how many rows share its expert. BLAS does not promise that (its kernels choose micro-tiles by the row
// count; OpenBLAS on an AMD EPYC gives a row other bits at 16 rows than at 13), and at EP > 1 an expert's
// rows come from several ranks, so only row-wise experts make "the same rows in, the same bits out"
// a test of the dispatcher alone. out (rows, OC) = in (rows, IC) W^T per segment, W (E, OC, IC).
void rowwise_forward(float* out, const float* in, const float* w, const std::vector<int32_t>& seg, int IC, int OC) {
  std::size_t row = 0;
  for (std::size_t e = 0; e < seg.size(); ++e)
    for (int32_t i = 0; i < seg[e]; ++i, ++row)
      for (int o = 0; o < OC; ++o) {
        float acc = 0.0f;
        for (int c = 0; c < IC; ++c) acc += in[row * IC + c] * w[(e * OC + o) * IC + c];
        out[row * OC + o] = acc;
      }
}
// din (rows, IC) = dout W row by row; dw (E, OC, IC) += dout^T in (sums over rows: order-dependent).
void rowwise_backward(float* din, float* dw, const float* dout, const float* in, const float* w,
                      const std::vector<int32_t>& seg, int IC, int OC) {
  std::size_t row = 0;
  for (std::size_t e = 0; e < seg.size(); ++e)
    for (int32_t i = 0; i < seg[e]; ++i, ++row) {
      for (int c = 0; c < IC; ++c) {
        float acc = 0.0f;
        for (int o = 0; o < OC; ++o) acc += dout[row * OC + o] * w[(e * OC + o) * IC + c];
        din[row * IC + c] = acc;
      }
      for (int o = 0; o < OC; ++o)
        for (int c = 0; c < IC; ++c) dw[(e * OC + o) * IC + c] += dout[row * OC + o] * in[row * IC + c];
    }
}

// The experts on rows (rows, C) with segment sizes seg (El experts starting at `first`): fc1, GELU, fc2.
// Backward (when dout is given): din, and dw1/dw2 += for those experts.
struct ExpertRun {
  Vec h, a, out, din;
};
ExpertRun run_experts(Backend& be, const Weights& w, int first, const std::vector<int32_t>& seg, const Vec& in,
                      const Vec* dout, Vec* dw1, Vec* dw2) {
  int rows = 0;
  for (int32_t s : seg) rows += s;
  const float* w1 = w.w1.data() + std::size_t(first) * kF * kC;
  const float* w2 = w.w2.data() + std::size_t(first) * kC * kF;
  ExpertRun r{Vec(rows * kF), Vec(rows * kF), Vec(rows * kC), Vec(rows * kC)};
  rowwise_forward(r.h.data(), in.data(), w1, seg, kC, kF);
  be.gelu_forward(r.a.data(), r.h.data(), r.h.size(), GeluKind::Tanh);
  rowwise_forward(r.out.data(), r.a.data(), w2, seg, kF, kC);
  if (dout == nullptr) return r;
  Vec da(rows * kF), dh(rows * kF);
  rowwise_backward(da.data(), dw2->data() + std::size_t(first) * kC * kF, dout->data(), r.a.data(), w2, seg, kF, kC);
  be.gelu_backward(dh.data(), r.h.data(), da.data(), dh.size(), GeluKind::Tanh);
  rowwise_backward(r.din.data(), dw1->data() + std::size_t(first) * kF * kC, dh.data(), in.data(), w1, seg, kC, kF);
  return r;
}

// Results of the layer for one rank's tokens.
struct Result {
  Vec y, dx, dprobs;
};

int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    log::error("FAILED: {}", what);
  }
}

bool bitwise(const Vec& a, const Vec& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// max |a - b| / max(max |b|, tiny)
double rel_diff(const Vec& a, const Vec& b) {
  double d = 0, m = 1e-30;
  for (std::size_t i = 0; i < a.size(); ++i) {
    d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    m = std::max(m, std::fabs(double(b[i])));
  }
  return a.size() == b.size() ? d / m : 1e30;
}

// The layer on one rank with all experts local: the single-process path.
Result local_layer(Backend& be, const Weights& w, const Tokens& t, const Case& c, Vec& dw1, Vec& dw2) {
  Routed r = route(be, t, c);
  Vec xp(r.R * kC);
  be.moe_permute(xp.data(), t.x.data(), r.dest.data(), kN, kK, kC, r.R);
  Vec dy_perm(r.R * kC), dprobs(kN * kK);
  Result res{Vec(kN * kC), Vec(kN * kC), {}};
  ExpertRun fwd = run_experts(be, w, 0, r.seg, xp, nullptr, nullptr, nullptr);
  be.moe_unpermute(res.y.data(), fwd.out.data(), r.probs.data(), r.dest.data(), kN, kK, kC);
  be.moe_unpermute_backward(dy_perm.data(), dprobs.data(), t.dy.data(), fwd.out.data(), r.probs.data(), r.dest.data(),
                            kN, kK, kC, r.R);
  ExpertRun bwd = run_experts(be, w, 0, r.seg, xp, &dy_perm, &dw1, &dw2);
  be.moe_permute_backward(res.dx.data(), bwd.din.data(), r.dest.data(), kN, kK, kC);
  res.dprobs = dprobs;
  return res;
}

// The same layer with the experts split over `ep`, tokens moved by `disp`.
Result ep_layer(Backend& be, TokenDispatcher& disp, const Weights& w, const Tokens& t, const Case& c, Vec& dw1,
                Vec& dw2) {
  Routed r = route(be, t, c);
  DispatchPlan p = disp.plan(r.seg.data());
  // The grouped GEMM's chunks: local expert l's rows from rank s, summing to its segment; this rank's own
  // chunk is the count it planned itself.
  for (int l = 0; l < p.local_experts; ++l) {
    int sum = 0;
    for (int s = 0; s < p.ep; ++s) sum += p.local_chunk_rows[std::size_t(l * p.ep + s)];
    check(sum == p.local_segment_rows[std::size_t(l)] &&
              p.local_chunk_rows[std::size_t(l * p.ep + p.me)] == r.seg[std::size_t(p.first_expert + l)],
          "local expert {}: chunk rows do not add up to its {} rows or miss this rank's {}", l,
          p.local_segment_rows[std::size_t(l)], r.seg[std::size_t(p.first_expert + l)]);
  }
  Vec xp(r.R * kC), xin(p.input_rows * kC);
  be.moe_permute(xp.data(), t.x.data(), r.dest.data(), kN, kK, kC, r.R);
  disp.dispatch(p, xin.data(), xp.data(), kC);
  ExpertRun fwd = run_experts(be, w, p.first_expert, p.local_segment_rows, xin, nullptr, nullptr, nullptr);
  Vec out_perm(r.R * kC);
  disp.combine(p, out_perm.data(), fwd.out.data(), kC);
  Result res{Vec(kN * kC), Vec(kN * kC), Vec(kN * kK)};
  be.moe_unpermute(res.y.data(), out_perm.data(), r.probs.data(), r.dest.data(), kN, kK, kC);
  // Backward: the transpose of each step, in reverse.
  Vec dy_perm(r.R * kC), dy_in(p.input_rows * kC), dx_perm(r.R * kC);
  be.moe_unpermute_backward(dy_perm.data(), res.dprobs.data(), t.dy.data(), out_perm.data(), r.probs.data(),
                            r.dest.data(), kN, kK, kC, r.R);
  disp.dispatch(p, dy_in.data(), dy_perm.data(), kC);
  ExpertRun bwd = run_experts(be, w, p.first_expert, p.local_segment_rows, xin, &dy_in, &dw1, &dw2);
  disp.combine(p, dx_perm.data(), bwd.din.data(), kC);
  be.moe_permute_backward(res.dx.data(), dx_perm.data(), r.dest.data(), kN, kK, kC);
  return res;
}

void check_case(Backend& be, Communicator& ep, Communicator& host_ep, const Case& c, TokenDispatcherType type) {
  const std::string tag =
      fmt::format("{} EP {} E {} capacity {} {}{}", token_dispatcher_name(type), ep.size(), c.E, c.capacity_factor,
                  c.policy == MoeDropPolicy::Probs ? "probs" : "position", c.pad ? " padded" : "");
  Weights w{random_vec(std::size_t(c.E) * kF * kC, 7, 0.3f), random_vec(std::size_t(c.E) * kC * kF, 8, 0.3f)};
  // Reference: every EP rank's tokens through all experts; weight gradients summed over the ranks.
  Vec rdw1(w.w1.size(), 0.0f), rdw2(w.w2.size(), 0.0f);
  Result mine_ref;
  for (int s = 0; s < ep.size(); ++s) {
    Result r = local_layer(be, w, tokens_of(ep.world_ranks()[s], c.E), c, rdw1, rdw2);
    if (s == ep.rank()) mine_ref = r;
  }
  TokenDispatcher disp(ep, host_ep, be, c.E, type);
  Vec dw1(w.w1.size(), 0.0f), dw2(w.w2.size(), 0.0f);
  Result got = ep_layer(be, disp, w, tokens_of(ep.world_ranks()[ep.rank()], c.E), c, dw1, dw2);
  expect(bitwise(got.y, mine_ref.y),
         fmt::format("output bitwise ({}): rel diff {:.3g}", tag, rel_diff(got.y, mine_ref.y)));
  expect(bitwise(got.dx, mine_ref.dx),
         fmt::format("input gradient bitwise ({}): rel diff {:.3g}", tag, rel_diff(got.dx, mine_ref.dx)));
  expect(bitwise(got.dprobs, mine_ref.dprobs), fmt::format("routing-weight gradient bitwise ({})", tag));
  // Only this rank's experts' gradients are computed here.
  const std::size_t b1 = std::size_t(disp.first_expert()) * kF * kC, n1 = std::size_t(disp.local_experts()) * kF * kC;
  Vec g1(dw1.begin() + b1, dw1.begin() + b1 + n1), r1(rdw1.begin() + b1, rdw1.begin() + b1 + n1);
  Vec g2(dw2.begin() + b1, dw2.begin() + b1 + n1), r2(rdw2.begin() + b1, rdw2.begin() + b1 + n1);
  const double d1 = rel_diff(g1, r1), d2 = rel_diff(g2, r2);
  expect(d1 <= 1e-6 && d2 <= 1e-6, fmt::format("expert weight gradients ({}): rel diff {:.3g}, {:.3g}", tag, d1, d2));
  // Outside this rank's experts nothing is touched.
  double outside = 0;
  for (std::size_t i = 0; i < dw1.size(); ++i)
    if (i < b1 || i >= b1 + n1) outside += std::fabs(dw1[i]) + std::fabs(dw2[i]);
  expect(outside == 0, fmt::format("gradients of other ranks' experts stay zero ({})", tag));
}

void check_groups(Backend& be, Communicator& ep, Communicator& host_ep) {
  const int n = ep.size();
  std::vector<Case> cases;
  for (int E : {std::max(n, 2), 2 * n, 4 * n}) {
    cases.push_back({E, 0.0, MoeDropPolicy::Probs, false});
    cases.push_back({E, 1.0, MoeDropPolicy::Probs, false});
    cases.push_back({E, 1.0, MoeDropPolicy::Position, false});
    cases.push_back({E, 1.5, MoeDropPolicy::Probs, true});
  }
  for (TokenDispatcherType type : {TokenDispatcherType::AllToAll, TokenDispatcherType::AllGather})
    for (const Case& c : cases) check_case(be, ep, host_ep, c, type);
}

int body(MpiRuntime& mpi, int, char**) {
  std::unique_ptr<Backend> be = make_backend("cpu", DType::F32);
  for (bool det : {false, true}) {
    CommOptions o;
    o.deterministic = det;
    o.timeout_seconds = 120;
    // The world as one EP group (TP 1, DP = EP = world).
    {
      GridSizes s;
      s.ep = mpi.world_size();
      ProcessGrid grid(mpi.world_size(), mpi.rank(), s);
      GridComms gc = make_grid_comms(grid, o, "mpi");
      check_groups(*be, *gc.ep, gc.host_ep());
    }
    // Two EP 2 groups inside DP 4, or EP 2 x TP 2 (the EP groups are the ranks with the same TP rank).
    if (mpi.world_size() == 4) {
      for (int tp : {1, 2}) {
        GridSizes s;
        s.ep = 2;
        s.tp = tp;
        ProcessGrid grid(mpi.world_size(), mpi.rank(), s);
        GridComms gc = make_grid_comms(grid, o, "mpi");
        check_groups(*be, *gc.ep, gc.host_ep());
      }
    }
  }
  std::unique_ptr<Communicator> world = make_mpi_world(CommOptions{});
  int32_t f = failures;
  world->all_reduce(&f, 1, ElemType::I32, ReduceOp::Sum);
  if (mpi.rank() == 0) log::info("moe_dispatch_check: {} ranks, {} failures", mpi.world_size(), f);
  return f == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::parallel::run_mpi_main("mpi_moe_dispatch_check", body, argc, argv); }
