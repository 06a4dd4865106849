// GPU vs CPU twin for the mixture-of-experts ops: router forward/backward (fp32, every mode), the dispatch
// plan (identical rows for every capacity / policy / padding, ties included), permute / unpermute and the
// grouped expert GEMM in fp32, bf16 and fp16, the load-balancing and z losses with their gradients, the
// shared expert's sigmoid gate, and the router input's jitter (the same Philox factors).
#include <cmath>
#include <cstring>
#include <numeric>

#include "kernels/moe/moe.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/unit/kernels/moe_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

namespace {

std::vector<int32_t> download_i32(Backend& b, const Buf& buf, std::size_t n) {
  const std::vector<unsigned char> raw = bytes_of(b, buf, n * 4);
  std::vector<int32_t> v(n);
  std::memcpy(v.data(), raw.data(), n * 4);
  return v;
}

// Logits skewed towards the first experts (so that capacities bind) and their routing on the CPU twin
// (the GPU ops below take it as input).
struct SkewedRouting : test::Routing {
  std::vector<float> logits;
};

SkewedRouting cpu_routing(Backend& cpu, int N, int E, int K, uint32_t seed) {
  std::vector<float> logits = randn(static_cast<std::size_t>(N) * E, seed, 1.5f);
  for (int n = 0; n < N; ++n)
    for (int e = 0; e < E; ++e) logits[static_cast<std::size_t>(n) * E + e] += 1.5f - 3.0f * e / E;
  return SkewedRouting{test::route(cpu, logits, N, E, K, MoeScore::Softmax, false), logits};
}

}  // namespace

TEST_CASE("gpu moe router forward/backward vs cpu, every score function and order", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins tw(DType::F32);
  const int N = 1000, E = 16, K = 4;
  const std::vector<float> logits = randn(static_cast<std::size_t>(N) * E, 1, 2.0f);
  const std::vector<float> dprobs = randn(static_cast<std::size_t>(N) * K, 2), dscores = randn(logits.size(), 3);
  for (MoeScore s : {MoeScore::Softmax, MoeScore::Sigmoid})
    for (bool pre : {false, true}) {
      INFO("sigmoid=" << (s == MoeScore::Sigmoid) << " pre_softmax=" << pre);
      Buf cl = upload_f32(*tw.cpu, logits), gl = upload_f32(*tw.gpu, logits);
      Buf cp(*tw.cpu, N * K * 4), gp(*tw.gpu, N * K * 4), ce(*tw.cpu, N * K * 4), ge(*tw.gpu, N * K * 4);
      Buf cs(*tw.cpu, logits.size() * 4), gs(*tw.gpu, logits.size() * 4);
      tw.cpu->moe_router_forward(cp.f(), ce.i(), cs.f(), cl.f(), N, E, K, s, pre);
      tw.gpu->moe_router_forward(gp.f(), ge.i(), gs.f(), gl.f(), N, E, K, s, pre);
      REQUIRE(download_i32(*tw.gpu, ge, N * K) == download_i32(*tw.cpu, ce, N * K));
      GPTRAIN_CHECK_CLOSE("probs", download_f32(*tw.gpu, gp, N * K), download_f32(*tw.cpu, cp, N * K), 1e-5);
      GPTRAIN_CHECK_CLOSE("scores", download_f32(*tw.gpu, gs, logits.size()), download_f32(*tw.cpu, cs, logits.size()),
                          1e-5);
      Buf cdp = upload_f32(*tw.cpu, dprobs), gdp = upload_f32(*tw.gpu, dprobs);
      Buf cds = upload_f32(*tw.cpu, dscores), gds = upload_f32(*tw.gpu, dscores);
      Buf cdl(*tw.cpu, logits.size() * 4), gdl(*tw.gpu, logits.size() * 4);
      tw.cpu->moe_router_backward(cdl.f(), cdp.f(), cds.f(), cl.f(), ce.i(), N, E, K, s, pre);
      tw.gpu->moe_router_backward(gdl.f(), gdp.f(), gds.f(), gl.f(), ge.i(), N, E, K, s, pre);
      GPTRAIN_CHECK_CLOSE("dlogits", download_f32(*tw.gpu, gdl, logits.size()),
                          download_f32(*tw.cpu, cdl, logits.size()), 1e-5);
    }
}

TEST_CASE("gpu moe sinkhorn router (training and evaluation, top-1 and top-2) vs cpu", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins tw(DType::F32);
  const int N = 1000, E = 16;
  const SkewedRouting r = cpu_routing(*tw.cpu, N, E, 2, 4);  // skewed: Sinkhorn moves choices off the first experts
  for (int K : {1, 2})
    for (bool train : {true, false}) {
      INFO("K=" << K << " train=" << train);
      Buf cl = upload_f32(*tw.cpu, r.logits), gl = upload_f32(*tw.gpu, r.logits);
      Buf cp(*tw.cpu, N * K * 4), gp(*tw.gpu, N * K * 4), ce(*tw.cpu, N * K * 4), ge(*tw.gpu, N * K * 4);
      Buf cn(*tw.cpu, r.logits.size() * 4), gn(*tw.gpu, r.logits.size() * 4);
      tw.cpu->moe_sinkhorn_router_forward(cp.f(), ce.i(), cn.f(), cl.f(), N, E, K, train);
      tw.gpu->moe_sinkhorn_router_forward(gp.f(), ge.i(), gn.f(), gl.f(), N, E, K, train);
      REQUIRE(download_i32(*tw.gpu, ge, N * K) == download_i32(*tw.cpu, ce, N * K));
      GPTRAIN_CHECK_CLOSE("probs", download_f32(*tw.gpu, gp, N * K), download_f32(*tw.cpu, cp, N * K), 1e-5);
      if (train)
        GPTRAIN_CHECK_CLOSE("normed", download_f32(*tw.gpu, gn, r.logits.size()),
                            download_f32(*tw.cpu, cn, r.logits.size()), 1e-4);
    }
}

TEST_CASE("gpu moe dispatch plan: the cpu twin's rows for every capacity, policy and padding", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins tw(DType::F32);
  const int N = 700, E = 8, K = 2;  // 1400 choices: several scan chunks per expert
  SkewedRouting r = cpu_routing(*tw.cpu, N, E, K, 11);
  for (bool ties : {false, true}) {
    if (ties)
      for (float& p : r.probs) p = std::round(p * 8.0f) / 8.0f;  // many equal probabilities
    Buf gexp = upload_i32(*tw.gpu, r.experts), gprob = upload_f32(*tw.gpu, r.probs);
    for (double factor : {-1.0, 0.5, 1.0, 1.5})
      for (MoeDropPolicy policy : {MoeDropPolicy::Probs, MoeDropPolicy::Position})
        for (bool pad : {false, true}) {
          if (pad && factor < 0) continue;
          const int capacity = factor < 0 ? -1 : moe_expert_capacity(N, E, K, factor);
          INFO("ties=" << ties << " capacity=" << capacity << " position=" << (policy == MoeDropPolicy::Position)
                       << " pad=" << pad);
          std::vector<int32_t> dest(N * K), seg(E);
          tw.cpu->moe_dispatch_plan(dest.data(), seg.data(), r.experts.data(), r.probs.data(), N, E, K, capacity,
                                    policy, pad);
          Buf gdest(*tw.gpu, N * K * 4), gseg(*tw.gpu, E * 4);
          tw.gpu->moe_dispatch_plan(gdest.i(), gseg.i(), gexp.i(), gprob.f(), N, E, K, capacity, policy, pad);
          REQUIRE(download_i32(*tw.gpu, gseg, E) == seg);
          REQUIRE(download_i32(*tw.gpu, gdest, N * K) == dest);
        }
  }
}

TEST_CASE("gpu moe permute, unpermute and grouped GEMM forward/backward vs cpu", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  const int N = 300, E = 6, K = 2, C = 64, OC = 96;
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    Twins tw(t);
    INFO("dtype " << dtype_name(t));
    SkewedRouting r = cpu_routing(*tw.cpu, N, E, K, 21);
    std::vector<int32_t> dest(N * K), seg(E);
    tw.cpu->moe_dispatch_plan(dest.data(), seg.data(), r.experts.data(), r.probs.data(), N, E, K,
                              moe_expert_capacity(N, E, K, 1.0), MoeDropPolicy::Probs, true);
    const int R = std::accumulate(seg.begin(), seg.end(), 0);
    const std::vector<float> x = rounded(t, randn(static_cast<std::size_t>(N) * C, 22));
    const std::vector<float> w = rounded(t, randn(static_cast<std::size_t>(E) * OC * C, 23, 0.1f));
    const std::vector<float> dy = rounded(t, randn(static_cast<std::size_t>(N) * OC, 24));
    Buf cdest = upload_i32(*tw.cpu, dest), gdest = upload_i32(*tw.gpu, dest);
    Buf cprob = upload_f32(*tw.cpu, r.probs), gprob = upload_f32(*tw.gpu, r.probs);
    Buf cx = upload_f32(*tw.cpu, x), gx = upload(*tw.gpu, t, x), cw = upload_f32(*tw.cpu, w),
        gw = upload(*tw.gpu, t, w);
    const std::size_t es = dtype_size(t);
    Buf cxp(*tw.cpu, R * C * 4), gxp(*tw.gpu, R * C * es), chp(*tw.cpu, R * OC * 4), ghp(*tw.gpu, R * OC * es);
    Buf cy(*tw.cpu, N * OC * 4), gy(*tw.gpu, N * OC * es);
    tw.cpu->moe_permute(cxp.get(), cx.get(), cdest.i(), N, K, C, R);
    tw.gpu->moe_permute(gxp.get(), gx.get(), gdest.i(), N, K, C, R);
    REQUIRE(download(*tw.gpu, t, gxp.get(), R * C) == download_f32(*tw.cpu, cxp, R * C));  // copies: exact
    // Two chunks per expert (as two EP source ranks give): one GEMM per chunk.
    std::vector<int32_t> chunk(2 * E);
    for (int e = 0; e < E; ++e) chunk[2 * e] = seg[e] / 3, chunk[2 * e + 1] = seg[e] - seg[e] / 3;
    tw.cpu->moe_grouped_matmul_forward(chp.get(), cxp.get(), cw.get(), chunk.data(), E, 2, C, OC);
    tw.gpu->moe_grouped_matmul_forward(ghp.get(), gxp.get(), gw.get(), chunk.data(), E, 2, C, OC);
    const std::vector<float> hp_cpu = download_f32(*tw.cpu, chp, R * OC);
    GPTRAIN_CHECK_CLOSE("grouped gemm", download(*tw.gpu, t, ghp.get(), R * OC), hp_cpu, tol(t));
    // Unpermute both from the same (cpu) expert outputs, rounded to the dtype, to test the op alone.
    Buf ghp_same = upload(*tw.gpu, t, rounded(t, hp_cpu));
    Buf chp_same = upload_f32(*tw.cpu, rounded(t, hp_cpu));
    tw.cpu->moe_unpermute(cy.get(), chp_same.get(), cprob.f(), cdest.i(), N, K, OC);
    tw.gpu->moe_unpermute(gy.get(), ghp_same.get(), gprob.f(), gdest.i(), N, K, OC);
    GPTRAIN_CHECK_CLOSE("unpermute", download(*tw.gpu, t, gy.get(), N * OC), download_f32(*tw.cpu, cy, N * OC), tol(t));
    // Backward.
    Buf cdy = upload_f32(*tw.cpu, dy), gdy = upload(*tw.gpu, t, dy);
    Buf cdhp(*tw.cpu, R * OC * 4), gdhp(*tw.gpu, R * OC * es), cdprob(*tw.cpu, N * K * 4), gdprob(*tw.gpu, N * K * 4);
    tw.cpu->moe_unpermute_backward(cdhp.get(), cdprob.f(), cdy.get(), chp_same.get(), cprob.f(), cdest.i(), N, K, OC,
                                   R);
    tw.gpu->moe_unpermute_backward(gdhp.get(), gdprob.f(), gdy.get(), ghp_same.get(), gprob.f(), gdest.i(), N, K, OC,
                                   R);
    const std::vector<float> dhp_cpu = download_f32(*tw.cpu, cdhp, R * OC);
    GPTRAIN_CHECK_CLOSE("unpermute backward input", download(*tw.gpu, t, gdhp.get(), R * OC), dhp_cpu, tol(t));
    GPTRAIN_CHECK_CLOSE("unpermute backward probs", download_f32(*tw.gpu, gdprob, N * K),
                        download_f32(*tw.cpu, cdprob, N * K), tol(t));
    Buf gdhp_same = upload(*tw.gpu, t, rounded(t, dhp_cpu)), cdhp_same = upload_f32(*tw.cpu, rounded(t, dhp_cpu));
    Buf cdxp(*tw.cpu, R * C * 4), gdxp(*tw.gpu, R * C * es);
    Buf cdw = upload_f32(*tw.cpu, std::vector<float>(w.size(), 0.0f)),
        gdw = upload_f32(*tw.gpu, std::vector<float>(w.size(), 0.0f));
    tw.cpu->moe_grouped_matmul_backward(cdxp.get(), cdw.f(), cdhp_same.get(), cxp.get(), cw.get(), chunk.data(), E, 2,
                                        C, OC);
    tw.gpu->moe_grouped_matmul_backward(gdxp.get(), gdw.f(), gdhp_same.get(), gxp.get(), gw.get(), chunk.data(), E, 2,
                                        C, OC);
    const std::vector<float> dxp_cpu = download_f32(*tw.cpu, cdxp, R * C);
    GPTRAIN_CHECK_CLOSE("grouped gemm dinp", download(*tw.gpu, t, gdxp.get(), R * C), dxp_cpu, tol(t));
    GPTRAIN_CHECK_CLOSE("grouped gemm dweight", download_f32(*tw.gpu, gdw, w.size()),
                        download_f32(*tw.cpu, cdw, w.size()), tol(t));
    Buf gdxp_same = upload(*tw.gpu, t, rounded(t, dxp_cpu)), cdxp_same = upload_f32(*tw.cpu, rounded(t, dxp_cpu));
    Buf cdx(*tw.cpu, N * C * 4), gdx(*tw.gpu, N * C * es);
    tw.cpu->moe_permute_backward(cdx.get(), cdxp_same.get(), cdest.i(), N, K, C);
    tw.gpu->moe_permute_backward(gdx.get(), gdxp_same.get(), gdest.i(), N, K, C);
    GPTRAIN_CHECK_CLOSE("permute backward", download(*tw.gpu, t, gdx.get(), N * C), download_f32(*tw.cpu, cdx, N * C),
                        tol(t));
  }
}

TEST_CASE("gpu moe load-balancing and z losses with their gradients vs cpu", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins tw(DType::F32);
  const int B = 4, S = 300, N = B * S, E = 8, K = 2;
  const SkewedRouting r = cpu_routing(*tw.cpu, N, E, K, 31);
  Buf gscores = upload_f32(*tw.gpu, r.scores), gexp = upload_i32(*tw.gpu, r.experts);
  Buf glogits = upload_f32(*tw.gpu, r.logits), gloss(*tw.gpu, 4), gd(*tw.gpu, r.scores.size() * 4);
  for (int seqs : {1, B}) {
    INFO("seqs=" << seqs);
    float cpu_loss = 0;
    tw.cpu->moe_load_balancing_loss(&cpu_loss, r.scores.data(), r.experts.data(), N, E, K, seqs, 0.01f);
    tw.gpu->moe_load_balancing_loss(gloss.f(), gscores.f(), gexp.i(), N, E, K, seqs, 0.01f);
    REQUIRE(download_f32(*tw.gpu, gloss, 1)[0] == Approx(cpu_loss).epsilon(1e-6));
    std::vector<float> cd(r.scores.size());
    tw.cpu->moe_load_balancing_loss_backward(cd.data(), r.experts.data(), N, E, K, seqs, 0.01f);
    tw.gpu->moe_load_balancing_loss_backward(gd.f(), gexp.i(), N, E, K, seqs, 0.01f);
    GPTRAIN_CHECK_CLOSE("dscores", download_f32(*tw.gpu, gd, cd.size()), cd, 1e-6);
  }
  float cpu_z = 0;
  tw.cpu->moe_z_loss(&cpu_z, r.logits.data(), N, E, 1e-3f);
  tw.gpu->moe_z_loss(gloss.f(), glogits.f(), N, E, 1e-3f);
  REQUIRE(download_f32(*tw.gpu, gloss, 1)[0] == Approx(cpu_z).epsilon(1e-5));
  std::vector<float> cd(r.logits.size(), 0.5f);
  Buf gdl = upload_f32(*tw.gpu, cd);
  tw.cpu->moe_z_loss_backward(cd.data(), r.logits.data(), N, E, 1e-3f);
  tw.gpu->moe_z_loss_backward(gdl.f(), glogits.f(), N, E, 1e-3f);
  GPTRAIN_CHECK_CLOSE("z-loss dlogits", download_f32(*tw.gpu, gdl, cd.size()), cd, 1e-6);
}

TEST_CASE("gpu moe shared-expert gate forward/backward vs cpu, in place", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  const int N = 300, C = 96;
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    Twins tw(t);
    INFO("dtype " << dtype_name(t));
    const std::size_t es = dtype_size(t), NC = std::size_t(N) * C;
    const std::vector<float> base = rounded(t, randn(NC, 41)), shared = rounded(t, randn(NC, 42));
    const std::vector<float> z = rounded(t, randn(N, 43, 2.0f)), dy = rounded(t, randn(NC, 44));
    Buf cacc = upload_f32(*tw.cpu, base), gacc = upload(*tw.gpu, t, base);
    Buf csh = upload_f32(*tw.cpu, shared), gsh = upload(*tw.gpu, t, shared);
    Buf cz = upload_f32(*tw.cpu, z), gz = upload(*tw.gpu, t, z);
    Buf cdy = upload_f32(*tw.cpu, dy), gdy = upload(*tw.gpu, t, dy);
    tw.cpu->moe_shared_gate_forward(cacc.get(), csh.get(), cz.get(), N, C);
    tw.gpu->moe_shared_gate_forward(gacc.get(), gsh.get(), gz.get(), N, C);
    GPTRAIN_CHECK_CLOSE("gated output", download(*tw.gpu, t, gacc.get(), NC), download_f32(*tw.cpu, cacc, NC), tol(t));
    Buf cdz(*tw.cpu, N * 4), gdz(*tw.gpu, N * es);
    // In place over the shared output, as the layer calls it.
    tw.cpu->moe_shared_gate_backward(csh.get(), cdz.get(), cdy.get(), csh.get(), cz.get(), N, C);
    tw.gpu->moe_shared_gate_backward(gsh.get(), gdz.get(), gdy.get(), gsh.get(), gz.get(), N, C);
    GPTRAIN_CHECK_CLOSE("dshared", download(*tw.gpu, t, gsh.get(), NC), download_f32(*tw.cpu, csh, NC), tol(t));
    GPTRAIN_CHECK_CLOSE("dgate logits", download(*tw.gpu, t, gdz.get(), N), download_f32(*tw.cpu, cdz, N), tol(t));
  }
}

TEST_CASE("gpu moe input jitter forward/backward vs cpu: the same Philox factors, backward accumulates", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  const uint64_t seed = 0x9e3779b97f4a7c15ull, offset = 1000003;  // unaligned offset: partial Philox blocks
  const float eps = 0.1f;
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    INFO("dtype " << dtype_name(t));
    Twins tw(t);
    const std::size_t n = 9973;
    const std::vector<float> x = rounded(t, randn(n, 151)), dy = rounded(t, randn(n, 152)),
                             acc = rounded(t, randn(n, 153));
    Buf cx = upload_f32(*tw.cpu, x), cy(*tw.cpu, n * 4), cdy = upload_f32(*tw.cpu, dy), cacc = upload_f32(*tw.cpu, acc);
    Buf gx = upload(*tw.gpu, t, x), gy(*tw.gpu, n * dtype_size(t)), gdy = upload(*tw.gpu, t, dy),
        gacc = upload(*tw.gpu, t, acc);
    tw.cpu->moe_input_jitter(cy.get(), cx.get(), n, eps, seed, offset);
    tw.gpu->moe_input_jitter(gy.get(), gx.get(), n, eps, seed, offset);
    const std::vector<float> want = download_f32(*tw.cpu, cy, n), got = download(*tw.gpu, t, gy.get(), n);
    // The factor (1 - eps) + u * 2 eps may be one FMA on the device: fp32 within an ulp or two, the 16-bit
    // types within their rounding.
    GPTRAIN_CHECK_CLOSE("jitter forward", got, want, t == DType::F32 ? 1e-6 : tol(t));
    std::size_t moved = 0;
    for (std::size_t i = 0; i < n; ++i) {
      INFO("element " << i);
      REQUIRE(std::fabs(want[i]) <= std::fabs(x[i]) * (1.0f + eps) * 1.0001f);
      moved += std::fabs(want[i] - x[i]) > 0.01f * eps * std::fabs(x[i]);
    }
    CHECK(moved > n * 9 / 10);  // the factors are not all 1
    tw.cpu->moe_input_jitter_backward(cacc.get(), cdy.get(), n, eps, seed, offset);
    tw.gpu->moe_input_jitter_backward(gacc.get(), gdy.get(), n, eps, seed, offset);
    GPTRAIN_CHECK_CLOSE("jitter backward (accumulated)", download(*tw.gpu, t, gacc.get(), n),
                        download_f32(*tw.cpu, cacc, n), t == DType::F32 ? 1e-6 : tol(t));
  }
}
