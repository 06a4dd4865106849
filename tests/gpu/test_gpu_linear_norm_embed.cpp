// GPU vs CPU twin: embedding (vocab shard, tokens outside the shard, deterministic backward that is
// bit-identical to the CPU's in fp32), LayerNorm/RMSNorm forward and backward (accumulating
// gradients), linear forward (with/without bias) and backward (dinp = / +=, dweight +=, dbias +=).
#include <random>

#include "tests/gpu/gpu_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

namespace {

std::vector<int32_t> random_ints(std::size_t n, int lo, int hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int32_t> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace

TEST_CASE("gpu embedding forward/backward vs cpu (vocab shard, repeated tokens)", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16}) {
    Twins tw(t);
    const int N = 300, C = 96, V_local = 50, vocab_start = 20, P = 64;
    // tokens in [0, 90): some below, some above the shard [20, 70); few distinct values, so rows repeat
    std::vector<int32_t> tokens = random_ints(N, 0, 89, 11), positions(N);
    for (int i = 0; i < N; ++i) positions[i] = i % P;
    std::vector<float> wte = rounded(t, randn(std::size_t(V_local) * C, 12)),
                       wpe = rounded(t, randn(std::size_t(P) * C, 13));
    std::vector<float> dout = rounded(t, randn(std::size_t(N) * C, 14));
    std::vector<float> dwte0 = randn(wte.size(), 15), dwpe0 = randn(wpe.size(), 16);  // += onto existing grads
    Backend& c = *tw.cpu;
    Backend& g = *tw.gpu;
    Buf ctok = upload_i32(c, tokens), cpos = upload_i32(c, positions), gtok = upload_i32(g, tokens),
        gpos = upload_i32(g, positions);
    Buf cwte = upload_f32(c, wte), cwpe = upload_f32(c, wpe), gwte = upload(g, t, wte), gwpe = upload(g, t, wpe);
    Buf cout(c, std::size_t(N) * C * 4), gout(g, std::size_t(N) * C * 4);
    for (bool with_wpe : {true, false}) {
      c.embedding_forward(cout.get(), ctok.i(), cpos.i(), cwte.get(), with_wpe ? cwpe.get() : nullptr, N, C,
                          vocab_start, V_local);
      g.embedding_forward(gout.get(), gtok.i(), gpos.i(), gwte.get(), with_wpe ? gwpe.get() : nullptr, N, C,
                          vocab_start, V_local);
      GPTRAIN_CHECK_CLOSE("embedding fwd " << dtype_name(t) << " wpe " << with_wpe,
                          download(g, t, gout.get(), std::size_t(N) * C), download_f32(c, cout, std::size_t(N) * C),
                          tol(t));
    }
    Buf cd = upload_f32(c, dout), gd = upload(g, t, dout);
    Buf cdwte = upload_f32(c, dwte0), cdwpe = upload_f32(c, dwpe0), gdwte = upload_f32(g, dwte0),
        gdwpe = upload_f32(g, dwpe0);
    c.embedding_backward(cdwte.f(), cdwpe.f(), cd.get(), ctok.i(), cpos.i(), N, C, vocab_start, V_local);
    g.embedding_backward(gdwte.f(), gdwpe.f(), gd.get(), gtok.i(), gpos.i(), N, C, vocab_start, V_local);
    std::vector<float> gw = download_f32(g, gdwte, wte.size()), cw = download_f32(c, cdwte, wte.size());
    std::vector<float> gp = download_f32(g, gdwpe, wpe.size()), cp = download_f32(c, cdwpe, wpe.size());
    if (t == DType::F32) {  // same rows summed in the same order from the same start: identical bits
      CHECK(std::memcmp(gw.data(), cw.data(), 4 * gw.size()) == 0);
      CHECK(std::memcmp(gp.data(), cp.data(), 4 * gp.size()) == 0);
    }
    GPTRAIN_CHECK_CLOSE("embedding dwte " << dtype_name(t), gw, cw, 1e-6);
    GPTRAIN_CHECK_CLOSE("embedding dwpe " << dtype_name(t), gp, cp, 1e-6);
  }
}

TEST_CASE("gpu embedding with Gemma's sqrt(hidden) scale vs cpu, forward and backward", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16}) {
    Twins tw(t);
    const int N = 200, C = 64, V = 40;
    const float scale = 8.0f;  // sqrt(64)
    std::vector<int32_t> tokens = random_ints(N, 0, V - 1, 21), positions(N, 0);
    std::vector<float> wte = rounded(t, randn(std::size_t(V) * C, 22)),
                       dout = rounded(t, randn(std::size_t(N) * C, 23));
    Backend& c = *tw.cpu;
    Backend& g = *tw.gpu;
    Buf ctok = upload_i32(c, tokens), cpos = upload_i32(c, positions), gtok = upload_i32(g, tokens),
        gpos = upload_i32(g, positions);
    Buf cwte = upload_f32(c, wte), gwte = upload(g, t, wte);
    Buf cout(c, std::size_t(N) * C * 4), gout(g, std::size_t(N) * C * 4);
    c.embedding_forward(cout.get(), ctok.i(), cpos.i(), cwte.get(), nullptr, N, C, 0, V, scale);
    g.embedding_forward(gout.get(), gtok.i(), gpos.i(), gwte.get(), nullptr, N, C, 0, V, scale);
    GPTRAIN_CHECK_CLOSE("scaled embedding fwd " << dtype_name(t), download(g, t, gout.get(), std::size_t(N) * C),
                        download_f32(c, cout, std::size_t(N) * C), tol(t));
    Buf cd = upload_f32(c, dout), gd = upload(g, t, dout);
    Buf cdwte(c, wte.size() * 4), gdwte(g, wte.size() * 4);
    c.fill_zero(cdwte.get(), wte.size() * 4);
    g.fill_zero(gdwte.get(), wte.size() * 4);
    c.embedding_backward(cdwte.f(), nullptr, cd.get(), ctok.i(), cpos.i(), N, C, 0, V, scale);
    g.embedding_backward(gdwte.f(), nullptr, gd.get(), gtok.i(), gpos.i(), N, C, 0, V, scale);
    GPTRAIN_CHECK_CLOSE("scaled embedding dwte " << dtype_name(t), download_f32(g, gdwte, wte.size()),
                        download_f32(c, cdwte, wte.size()), 1e-6);
  }
}

TEST_CASE("gpu layernorm / rmsnorm forward and backward vs cpu, plain and zero-centred gamma", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    for (bool rms : {false, true}) {
      for (auto [with_bias, zc] :
           {std::pair{true, false}, std::pair{false, false}, std::pair{true, true}, std::pair{false, true}}) {
        if (rms && with_bias) continue;
        Twins tw(t);
        Backend& c = *tw.cpu;
        Backend& g = *tw.gpu;
        const int N = 333, C = 200;  // C not a multiple of 32, N spans several 128-row tiles
        const std::size_t NC = std::size_t(N) * C;
        std::vector<float> x = rounded(t, randn(NC, 21, 2.0f)), w = rounded(t, randn(C, 22)),
                           b = rounded(t, randn(C, 23));
        for (std::size_t i = 0; i < NC; ++i) x[i] = round_to(t, x[i] + 0.5f);  // nonzero row means
        std::vector<float> dy = rounded(t, randn(NC, 24)), dx0 = rounded(t, randn(NC, 25));
        std::vector<float> dw0 = randn(C, 26), db0 = randn(C, 27);
        Buf cx = upload_f32(c, x), cw = upload_f32(c, w), cb = upload_f32(c, b), cy(c, NC * 4), cm(c, N * 4),
            cr(c, N * 4);
        Buf gx = upload(g, t, x), gw = upload(g, t, w), gb = upload(g, t, b), gy(g, NC * 4), gm(g, N * 4), gr(g, N * 4);
        if (rms) {
          c.rmsnorm_forward(cy.get(), cr.f(), cx.get(), cw.get(), N, C, 1e-5f, zc);
          g.rmsnorm_forward(gy.get(), gr.f(), gx.get(), gw.get(), N, C, 1e-5f, zc);
        } else {
          c.layernorm_forward(cy.get(), cm.f(), cr.f(), cx.get(), cw.get(), with_bias ? cb.get() : nullptr, N, C, 1e-5f,
                              zc);
          g.layernorm_forward(gy.get(), gm.f(), gr.f(), gx.get(), gw.get(), with_bias ? gb.get() : nullptr, N, C, 1e-5f,
                              zc);
          GPTRAIN_CHECK_CLOSE("ln mean", download_f32(g, gm, N), download_f32(c, cm, N), 1e-5);
        }
        const std::string what = std::string(rms ? "rmsnorm" : "layernorm") + (zc ? " 1p" : "");
        GPTRAIN_CHECK_CLOSE(what << " fwd " << dtype_name(t), download(g, t, gy.get(), NC), download_f32(c, cy, NC),
                            tol(t));
        GPTRAIN_CHECK_CLOSE(what << " rstd " << dtype_name(t), download_f32(g, gr, N), download_f32(c, cr, N), 1e-5);
        Buf cdy = upload_f32(c, dy), cdx = upload_f32(c, dx0), cdw = upload_f32(c, dw0), cdb = upload_f32(c, db0);
        Buf gdy = upload(g, t, dy), gdx = upload(g, t, dx0), gdw = upload_f32(g, dw0), gdb = upload_f32(g, db0);
        // The GPU backward reads the GPU's own statistics (as in training); they matched the CPU's above.
        if (rms) {
          c.rmsnorm_backward(cdx.get(), cdw.f(), cdy.get(), cx.get(), cw.get(), cr.f(), N, C, zc);
          g.rmsnorm_backward(gdx.get(), gdw.f(), gdy.get(), gx.get(), gw.get(), gr.f(), N, C, zc);
        } else {
          c.layernorm_backward(cdx.get(), cdw.f(), with_bias ? cdb.f() : nullptr, cdy.get(), cx.get(), cw.get(), cm.f(),
                               cr.f(), N, C, zc);
          g.layernorm_backward(gdx.get(), gdw.f(), with_bias ? gdb.f() : nullptr, gdy.get(), gx.get(), gw.get(), gm.f(),
                               gr.f(), N, C, zc);
        }
        GPTRAIN_CHECK_CLOSE(what << " dinp_acc " << dtype_name(t), download(g, t, gdx.get(), NC),
                            download_f32(c, cdx, NC), tol(t));
        GPTRAIN_CHECK_CLOSE(what << " dweight " << dtype_name(t), download_f32(g, gdw, C), download_f32(c, cdw, C),
                            tol(t));
        if (with_bias)
          GPTRAIN_CHECK_CLOSE(what << " dbias " << dtype_name(t), download_f32(g, gdb, C), download_f32(c, cdb, C),
                              tol(t));
      }
    }
  }
}

TEST_CASE(
    "gpu per-head Q/K rmsnorm (qk_norm, --qk-layernorm, and without weights --qk-l2-norm) fwd and bwd vs cpu, GQA",
    "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    for (int mode : {0, 1, 2}) {  // weights, zero-centred weights, no weights
      const bool zc = mode == 1, w = mode != 2;
      Twins tw(t);
      Backend& c = *tw.cpu;
      Backend& g = *tw.gpu;
      const int N = 77, NH = 8, NKV = 2, HS = 80;  // HS not a multiple of 32
      const std::size_t n = std::size_t(N) * (NH + 2 * NKV) * HS, saved = std::size_t(N) * (NH + NKV) * HS,
                        pairs = std::size_t(N) * (NH + NKV);
      const std::vector<float> x = rounded(t, randn(n, 41, 2.0f)), qw = rounded(t, randn(HS, 42)),
                               kw = rounded(t, randn(HS, 43)), dy = rounded(t, randn(n, 44));
      const std::vector<float> dqw0 = randn(HS, 45), dkw0 = randn(HS, 46);
      Buf cx = upload_f32(c, x), cq = upload_f32(c, qw), ck = upload_f32(c, kw), cs(c, saved * 4), cr(c, pairs * 4);
      Buf gx = upload(g, t, x), gq = upload(g, t, qw), gk = upload(g, t, kw), gs(g, saved * 4), gr(g, pairs * 4);
      auto on = [w](Buf& b) { return w ? b.get() : nullptr; };
      auto on_f = [w](Buf& b) { return w ? b.f() : nullptr; };
      c.qk_norm_forward(cx.get(), cs.get(), cr.f(), on(cq), on(ck), N, NH, NKV, HS, 1e-6f, zc);
      g.qk_norm_forward(gx.get(), gs.get(), gr.f(), on(gq), on(gk), N, NH, NKV, HS, 1e-6f, zc);
      const std::string what = std::string("qk_norm") + (zc ? " 1p " : w ? " " : " no weights ") + dtype_name(t);
      GPTRAIN_CHECK_CLOSE(what << " fwd", download(g, t, gx.get(), n), download_f32(c, cx, n), tol(t));
      GPTRAIN_CHECK_CLOSE(what << " saved", download(g, t, gs.get(), saved), download_f32(c, cs, saved), 1e-6);
      GPTRAIN_CHECK_CLOSE(what << " rstd", download_f32(g, gr, pairs), download_f32(c, cr, pairs), 1e-5);
      Buf cd = upload_f32(c, dy), cdq = upload_f32(c, dqw0), cdk = upload_f32(c, dkw0);
      Buf gd = upload(g, t, dy), gdq = upload_f32(g, dqw0), gdk = upload_f32(g, dkw0);
      c.qk_norm_backward(cd.get(), on_f(cdq), on_f(cdk), cs.get(), on(cq), on(ck), cr.f(), N, NH, NKV, HS, zc);
      g.qk_norm_backward(gd.get(), on_f(gdq), on_f(gdk), gs.get(), on(gq), on(gk), gr.f(), N, NH, NKV, HS, zc);
      GPTRAIN_CHECK_CLOSE(what << " dqkv", download(g, t, gd.get(), n), download_f32(c, cd, n), tol(t));
      GPTRAIN_CHECK_CLOSE(what << " dq_weight", download_f32(g, gdq, HS), download_f32(c, cdq, HS), tol(t));
      GPTRAIN_CHECK_CLOSE(what << " dk_weight", download_f32(g, gdk, HS), download_f32(c, cdk, HS), tol(t));
    }
  }
}

TEST_CASE("gpu matmul forward/backward vs cpu (bias, accumulation, fp32 main grads)", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    for (bool with_bias : {true, false}) {
      for (bool acc : {false, true}) {
        Twins tw(t);
        Backend& c = *tw.cpu;
        Backend& g = *tw.gpu;
        const int N = 130, IC = 96, OC = 72;
        std::vector<float> x = rounded(t, randn(std::size_t(N) * IC, 31)),
                           w = rounded(t, randn(std::size_t(OC) * IC, 32, 0.1f));
        std::vector<float> b = rounded(t, randn(OC, 33)), dy = rounded(t, randn(std::size_t(N) * OC, 34));
        std::vector<float> dx0 = rounded(t, randn(std::size_t(N) * IC, 35)), dw0 = randn(std::size_t(OC) * IC, 36),
                           db0 = randn(OC, 37);
        Buf cx = upload_f32(c, x), cw = upload_f32(c, w), cb = upload_f32(c, b), cy(c, std::size_t(N) * OC * 4);
        Buf gx = upload(g, t, x), gw = upload(g, t, w), gb = upload(g, t, b), gy(g, std::size_t(N) * OC * 4);
        c.matmul_forward(cy.get(), cx.get(), cw.get(), with_bias ? cb.get() : nullptr, N, IC, OC);
        g.matmul_forward(gy.get(), gx.get(), gw.get(), with_bias ? gb.get() : nullptr, N, IC, OC);
        GPTRAIN_CHECK_CLOSE("matmul fwd " << dtype_name(t), download(g, t, gy.get(), std::size_t(N) * OC),
                            download_f32(c, cy, std::size_t(N) * OC), tol(t));
        Buf cdy = upload_f32(c, dy), cdx = upload_f32(c, dx0), cdw = upload_f32(c, dw0), cdb = upload_f32(c, db0);
        Buf gdy = upload(g, t, dy), gdx = upload(g, t, dx0), gdw = upload_f32(g, dw0), gdb = upload_f32(g, db0);
        c.matmul_backward(cdx.get(), cdw.f(), with_bias ? cdb.f() : nullptr, cdy.get(), cx.get(), cw.get(), N, IC, OC,
                          acc);
        g.matmul_backward(gdx.get(), gdw.f(), with_bias ? gdb.f() : nullptr, gdy.get(), gx.get(), gw.get(), N, IC, OC,
                          acc);
        GPTRAIN_CHECK_CLOSE("matmul dinp " << dtype_name(t) << " acc " << acc, download(g, t, gdx.get(), x.size()),
                            download_f32(c, cdx, x.size()), tol(t));
        GPTRAIN_CHECK_CLOSE("matmul dweight " << dtype_name(t), download_f32(g, gdw, w.size()),
                            download_f32(c, cdw, w.size()), tol(t));
        if (with_bias)
          GPTRAIN_CHECK_CLOSE("matmul dbias " << dtype_name(t), download_f32(g, gdb, OC), download_f32(c, cdb, OC),
                              tol(t));
      }
    }
  }
}
