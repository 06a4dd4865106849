// GPU vs CPU twin: RoPE (interleaved / half-split, partial rotary, Llama-3 frequency scaling, linear interpolation,
// YaRN, inverse undoes forward up to YaRN's concentration squared),
// fused cross-entropy over a padded, sharded vocabulary (stats, loss, backward, masked rows, in place) and fused AdamW
// (fp32 master/moments, compute-dtype model copy written in the same pass; moments stored bf16, both or one;
// bf16 parameters without a master, rounded stochastically) and fused Lion.
#include <cmath>
#include <cstdlib>
#include <random>

#include "kernels/adamw/adamw_math.h"
#include "kernels/rope/rope_math.h"
#include "tests/gpu/gpu_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

TEST_CASE("gpu rope vs cpu, and inverse(forward(x)) == x", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  // Llama-3 scaling with an original context of 64: with head dim 64 and base 1e4 some frequencies are kept,
  // some blended, some divided by the factor.
  RopeScaling llama3;
  llama3.llama3 = true;
  llama3.factor = 32.0;
  llama3.original_max_positions = 64;
  // Linear interpolation by 3; YaRN over an original 64 positions, unrounded range, concentration from
  // --mscale 0.8 --mscale-all-dim 0.2 (forward is m R: the transpose gives back m^2 x).
  RopeScaling linear, yarn;
  linear.seq_len_interpolation_factor = 3.0;
  yarn.yarn = true;
  yarn.yarn_factor = 8.0;
  yarn.yarn_original_max_positions = 64;
  yarn.yarn_round_to_int = false;
  yarn.yarn_mscale = 0.8;
  yarn.yarn_mscale_all_dim = 0.2;
  for (DType t : {DType::F32, DType::BF16}) {
    for (bool interleaved : {false, true}) {
      for (int rotary_dim : {64, 32}) {  // full and partial rotary
        for (const RopeScaling& scaling : {RopeScaling{}, llama3, linear, yarn}) {
          Twins tw(t);
          Backend& c = *tw.cpu;
          Backend& g = *tw.gpu;
          const int N = 50, NH = 4, NKV = 2, HS = 64;
          const std::size_t n = std::size_t(N) * (NH + 2 * NKV) * HS;
          std::vector<float> x = rounded(t, randn(n, 51));
          std::vector<int32_t> pos(N);
          for (int i = 0; i < N; ++i) pos[i] = (i * 37) % 2048;
          Buf cx = upload_f32(c, x), gx = upload(g, t, x), cp = upload_i32(c, pos), gp = upload_i32(g, pos);
          c.rope(cx.get(), cp.i(), N, NH, NKV, HS, rotary_dim, 10000.0f, interleaved, false, scaling);
          g.rope(gx.get(), gp.i(), N, NH, NKV, HS, rotary_dim, 10000.0f, interleaved, false, scaling);
          // cosf/sinf of angles up to ~2000 rad differ by an ulp or so between libm and CUDA.
          GPTRAIN_CHECK_CLOSE("rope " << dtype_name(t) << " interleaved " << interleaved << " dim " << rotary_dim
                                      << " llama3 " << scaling.llama3 << " linear "
                                      << scaling.seq_len_interpolation_factor << " yarn " << scaling.yarn,
                              download(g, t, gx.get(), n), download_f32(c, cx, n), t == DType::F32 ? 2e-5 : tol(t));
          g.rope(gx.get(), gp.i(), N, NH, NKV, HS, rotary_dim, 10000.0f, interleaved, true, scaling);
          const float m = rope_concentration(scaling);
          std::vector<float> m2x = x;  // the rotated dims of the Q and K heads scaled
          for (int i = 0; i < N; ++i)
            for (int h = 0; h < NH + NKV; ++h)
              for (int d = 0; d < rotary_dim; ++d) m2x[(std::size_t(i) * (NH + 2 * NKV) + h) * HS + d] *= m * m;
          GPTRAIN_CHECK_CLOSE("rope inverse", download(g, t, gx.get(), n), m2x, t == DType::F32 ? 1e-5 : 2 * tol(t));
        }
      }
    }
  }
}

TEST_CASE("gpu fused cross-entropy vs cpu: padded vocab shard, masked rows, in-place backward", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16}) {
    Twins tw(t);
    Backend& c = *tw.cpu;
    Backend& g = *tw.gpu;
    const int N = 64, V_local = 1200, V_valid = 1100, vocab_start = 1000;
    const std::size_t nl = std::size_t(N) * V_local;
    std::vector<float> logits = rounded(t, randn(nl, 61, 3.0f));
    std::mt19937 rng(62);
    std::uniform_int_distribution<int> tgt(0, 2 * vocab_start + V_valid - 1);  // some targets off this shard
    std::vector<int32_t> targets(N);
    for (auto& x : targets) x = tgt(rng);
    std::vector<float> dloss(N, 1.0f / N);
    dloss[3] = 0.0f;  // a masked row
    Buf cl = upload_f32(c, logits), gl = upload(g, t, logits), ct = upload_i32(c, targets), gt = upload_i32(g, targets);
    Buf cm(c, N * 4), cs(c, N * 4), ctl(c, N * 4), gm(g, N * 4), gs(g, N * 4), gtl(g, N * 4);
    XentStats cst{cm.f(), cs.f(), ctl.f()}, gst{gm.f(), gs.f(), gtl.f()};
    c.xent_stats(cst, cl.get(), ct.i(), N, V_local, V_valid, vocab_start);
    g.xent_stats(gst, gl.get(), gt.i(), N, V_local, V_valid, vocab_start);
    GPTRAIN_CHECK_CLOSE("xent row_max", download_f32(g, gm, N), download_f32(c, cm, N), 0.0);  // max is exact
    GPTRAIN_CHECK_CLOSE("xent row_sumexp", download_f32(g, gs, N), download_f32(c, cs, N), 1e-5);
    GPTRAIN_CHECK_CLOSE("xent target_logit", download_f32(g, gtl, N), download_f32(c, ctl, N), 0.0);
    Buf closs(c, N * 4), gloss(g, N * 4);
    c.xent_loss(closs.f(), cst, N);
    g.xent_loss(gloss.f(), gst, N);
    GPTRAIN_CHECK_CLOSE("xent loss", download_f32(g, gloss, N), download_f32(c, closs, N), 1e-5);
    Buf cdl = upload_f32(c, dloss), gdl = upload_f32(g, dloss);
    c.xent_backward(cl.get(), cl.get(), ct.i(), cm.f(), cs.f(), cdl.f(), N, V_local, V_valid, vocab_start);  // in place
    g.xent_backward(gl.get(), gl.get(), gt.i(), gm.f(), gs.f(), gdl.f(), N, V_local, V_valid, vocab_start);
    std::vector<float> gd = download(g, t, gl.get(), nl), cd = download_f32(c, cl, nl);
    GPTRAIN_CHECK_CLOSE("xent dlogits " << dtype_name(t), gd, cd, tol(t));
    for (int r = 0; r < N; ++r)
      for (int col = V_valid; col < V_local; ++col) REQUIRE(gd[std::size_t(r) * V_local + col] == 0.0f);  // padding
    for (int col = 0; col < V_local; ++col) REQUIRE(gd[std::size_t(3) * V_local + col] == 0.0f);          // masked row
  }
}

TEST_CASE("gpu fused adamw vs cpu, model copy in the compute dtype", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    Twins tw(t);
    Backend& c = *tw.cpu;
    Backend& g = *tw.gpu;
    const std::size_t n = 100003;
    std::vector<float> p = randn(n, 71), grad = randn(n, 72, 0.01f), m = randn(n, 73, 0.001f), v = randn(n, 74, 3e-3f);
    for (float& x : v) x *= x;  // second moments are non-negative
    Buf cp = upload_f32(c, p), cg = upload_f32(c, grad), cm = upload_f32(c, m), cv = upload_f32(c, v), cmodel(c, n * 4);
    Buf gp = upload_f32(g, p), gg = upload_f32(g, grad), gm = upload_f32(g, m), gv = upload_f32(g, v), gmodel(g, n * 4);
    for (int step = 1; step <= 3; ++step) {
      c.adamw_update(cp.f(), cmodel.get(), cg.f(), cm.f(), cv.f(), n, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, step, 0.5f);
      g.adamw_update(gp.f(), gmodel.get(), gg.f(), gm.f(), gv.f(), n, 3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, step, 0.5f);
    }
    std::vector<float> gpv = download_f32(g, gp, n), cpv = download_f32(c, cp, n);
    GPTRAIN_CHECK_CLOSE("adamw master", gpv, cpv, 1e-6);
    GPTRAIN_CHECK_CLOSE("adamw m", download_f32(g, gm, n), download_f32(c, cm, n), 1e-6);
    GPTRAIN_CHECK_CLOSE("adamw v", download_f32(g, gv, n), download_f32(c, cv, n), 1e-6);
    std::vector<float> model = download(g, t, gmodel.get(), n);
    for (std::size_t i = 0; i < n; ++i) REQUIRE(model[i] == round_to(t, gpv[i]));  // same pass, same value
  }
}

TEST_CASE("gpu fused adamw with bf16-stored moments vs cpu (both, or one of the two)", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  // Each (m, v) dtype pair is its own kernel instantiation (--exp-avg-dtype / --exp-avg-sq-dtype).
  const std::pair<DType, DType> pairs[] = {
      {DType::BF16, DType::BF16}, {DType::F32, DType::BF16}, {DType::BF16, DType::F32}, {DType::F32, DType::F32}};
  for (DType t : {DType::F32, DType::BF16})
    for (const auto& [m_dtype, v_dtype] : pairs) {
      INFO("compute " << dtype_name(t) << " m " << dtype_name(m_dtype) << " v " << dtype_name(v_dtype));
      Twins tw(t);
      Backend& c = *tw.cpu;
      Backend& g = *tw.gpu;
      const std::size_t n = 100003;  // odd: the bf16 arrays end mid-word
      std::vector<float> p = randn(n, 81), grad = randn(n, 82, 0.01f), m = randn(n, 83, 0.001f),
                         v = randn(n, 84, 3e-3f);
      for (float& x : v) x *= x;
      Buf cp = upload_f32(c, p), cg = upload_f32(c, grad), cmodel(c, n * 4);
      Buf gp = upload_f32(g, p), gg = upload_f32(g, grad), gmodel(g, n * 4);
      // The moments stored in their dtypes, the same values on both twins.
      Buf cm = upload(c, m_dtype, m), cv = upload(c, v_dtype, v), gm = upload(g, m_dtype, m),
          gv = upload(g, v_dtype, v);
      for (int step = 1; step <= 3; ++step) {
        c.adamw_update_stored(cp.f(), cmodel.get(), cg.f(), {cm.get(), m_dtype, cv.get(), v_dtype}, n, 3e-4f, 0.9f,
                              0.95f, 1e-8f, 0.1f, step, 0.5f);
        g.adamw_update_stored(gp.f(), gmodel.get(), gg.f(), {gm.get(), m_dtype, gv.get(), v_dtype}, n, 3e-4f, 0.9f,
                              0.95f, 1e-8f, 0.1f, step, 0.5f);
      }
      std::vector<float> gpv = download_f32(g, gp, n), cpv = download_f32(c, cp, n);
      GPTRAIN_CHECK_CLOSE("adamw stored moments: master", gpv, cpv, 1e-6);
      for (int which = 0; which < 2; ++which) {
        const DType d = which == 0 ? m_dtype : v_dtype;
        const Buf& gb = which == 0 ? gm : gv;
        const Buf& cb = which == 0 ? cm : cv;
        if (d == DType::F32) {
          GPTRAIN_CHECK_CLOSE("fp32 moment " << which, download_f32(g, gb, n), download_f32(c, cb, n), 1e-6);
          continue;
        }
        // bf16: the same value, or a neighbour where the fp32 steps (FMA on the device) straddle a rounding
        // boundary.
        std::vector<uint16_t> gh(n), ch(n);
        g.copy_to_host(gh.data(), gb.get(), n * 2);
        c.copy_to_host(ch.data(), cb.get(), n * 2);
        std::size_t differ = 0;
        for (std::size_t i = 0; i < n; ++i) {
          REQUIRE(std::abs(int(gh[i]) - int(ch[i])) <= 1);
          differ += gh[i] != ch[i];
        }
        CHECK(differ < n / 100);
      }
      std::vector<float> model = download(g, t, gmodel.get(), n);
      for (std::size_t i = 0; i < n; ++i) REQUIRE(model[i] == round_to(t, gpv[i]));
    }
}

TEST_CASE("gpu fused lion vs cpu, model copy in the compute dtype", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16}) {
    Twins tw(t);
    Backend& c = *tw.cpu;
    Backend& g = *tw.gpu;
    const std::size_t n = 100003;
    const float lr = 1e-3f;
    std::vector<float> p = randn(n, 91), grad = randn(n, 92, 0.01f), m = randn(n, 93, 0.001f);
    Buf cp = upload_f32(c, p), cg = upload_f32(c, grad), cm = upload_f32(c, m), cmodel(c, n * 4);
    Buf gp = upload_f32(g, p), gg = upload_f32(g, grad), gm = upload_f32(g, m), gmodel(g, n * 4);
    for (int step = 1; step <= 3; ++step) {
      c.lion_update(cp.f(), cmodel.get(), cg.f(), cm.f(), n, lr, 0.9f, 0.95f, 0.1f, 0.5f);
      g.lion_update(gp.f(), gmodel.get(), gg.f(), gm.f(), n, lr, 0.9f, 0.95f, 0.1f, 0.5f);
    }
    std::vector<float> gpv = download_f32(g, gp, n), cpv = download_f32(c, cp, n);
    GPTRAIN_CHECK_CLOSE("lion exp_avg", download_f32(g, gm, n), download_f32(c, cm, n), 1e-6);
    // The sign step: the same, except where beta1's interpolation is within rounding of 0 (FMA on the
    // device), which moves that weight by 2 lr per step at most.
    std::size_t flipped = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const float d = std::fabs(gpv[i] - cpv[i]);
      if (d > 1e-6f * std::fabs(cpv[i]) + 1e-7f) {
        ++flipped;
        REQUIRE(d <= 6.0f * lr * 1.001f);
      }
    }
    CHECK(flipped <= n / 10000);
    std::vector<float> model = download(g, t, gmodel.get(), n);
    for (std::size_t i = 0; i < n; ++i) REQUIRE(model[i] == round_to(t, gpv[i]));  // same pass, same value
  }
}

TEST_CASE("gpu adamw with stochastic rounding (bf16 parameters, no master) vs cpu", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  // fp32 parameters (bf16 values held in fp32) and bf16 parameters: the CPU twin holds bf16 values in fp32.
  for (DType t : {DType::F32, DType::BF16}) {
    Twins tw(t);
    Backend& c = *tw.cpu;
    Backend& g = *tw.gpu;
    const std::size_t n = 100003;
    std::vector<float> p = randn(n, 91), grad = randn(n, 92, 0.01f);
    for (float& x : p) x = bf16_to_f32(f32_to_bf16(x));
    Buf cp = upload_f32(c, p), cg = upload_f32(c, grad), cm(c, n * 2), cv(c, n * 2);
    Buf gp = upload(g, t, p), gg = upload_f32(g, grad), gm(g, n * 2), gv(g, n * 2);
    for (Backend* b : {&c, &g}) {
      b->fill_zero((b == &c ? cm : gm).get(), n * 2);
      b->fill_zero((b == &c ? cv : gv).get(), n * 2);
    }
    const StochasticRounding sr{77, 0x1234u, 3, 500, 1000, 4000};
    for (int step = 1; step <= 3; ++step) {
      c.adamw_update_stochastic(cp.get(), cg.f(), {cm.get(), DType::BF16, cv.get(), DType::BF16}, n, 1e-4f, 0.9f, 0.95f,
                                1e-8f, 0.1f, step, 0.5f, sr);
      g.adamw_update_stochastic(gp.get(), gg.f(), {gm.get(), DType::BF16, gv.get(), DType::BF16}, n, 1e-4f, 0.9f, 0.95f,
                                1e-8f, 0.1f, step, 0.5f, sr);
    }
    // The same bf16 weight, or its neighbour where the fp32 step (FMA on the device) crossed the random threshold.
    const std::vector<float> gpv = download(g, t, gp.get(), n), cpv = download_f32(c, cp, n);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < n; ++i) {
      REQUIRE(cpv[i] == bf16_to_f32(f32_to_bf16(cpv[i])));
      REQUIRE(gpv[i] == bf16_to_f32(f32_to_bf16(gpv[i])));
      REQUIRE(std::abs(int(f32_to_bf16(gpv[i])) - int(f32_to_bf16(cpv[i]))) <= 1);
      differ += gpv[i] != cpv[i];
    }
    CHECK(differ < n / 100);
  }
}
