// GPU vs CPU twin for the fused ops: residual add + LayerNorm/RMSNorm (also: the fused CUDA kernel gives
// the same bits as the GPU's own add + norm, since it is the same maths in the same order), and linear +
// GELU forward / backward through GELU, on the cuBLASLt epilogue path (tanh, bf16/fp16, widths divisible
// by 8) and on the fallback path (erf, fp32, odd widths).
#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/unit/core/model_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

namespace {

// Per-token losses and all gradients (fp32 host copies) of one micro-batch, forward + backward.
std::pair<std::vector<float>, std::vector<float>> model_losses_and_grads(Backend& be, StageConfig c, bool fused) {
  c.fused_ops = fused;
  GptStage m(c, be);
  m.init_parameters();
  m.zero_grads();
  auto a = m.make_activations();
  m.load_batch(*a, test::random_batch(c, 77));
  m.forward(*a, nullptr, true);
  const auto s = m.loss_sum(*a);
  m.backward(*a, nullptr, float(1.0 / s.num_tokens));
  be.synchronize();
  return {a->host_losses, test::to_host(be, m.grads(), m.layout().total)};
}

}  // namespace

TEST_CASE("gpu residual layernorm / rmsnorm forward vs cpu, and vs the gpu's unfused add + norm", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    for (bool rms : {false, true}) {
      for (bool in_place : {false, true}) {
        Twins tw(t);
        Backend& c = *tw.cpu;
        Backend& g = *tw.gpu;
        const int N = 333, C = 200;
        const std::size_t NC = std::size_t(N) * C;
        std::vector<float> a = rounded(t, randn(NC, 41, 2.0f)), b = rounded(t, randn(NC, 42));
        std::vector<float> w = rounded(t, randn(C, 43)), bias = rounded(t, randn(C, 44));
        for (float& v : a) v = round_to(t, v + 0.5f);
        const std::size_t es = dtype_size(t);
        Buf ca = upload_f32(c, a), cb = upload_f32(c, b), cw = upload_f32(c, w), cbias = upload_f32(c, bias);
        Buf cres(c, NC * 4), cy(c, NC * 4), cm(c, N * 4), cr(c, N * 4);
        Buf ga = upload(g, t, a), gb = upload(g, t, b), gw = upload(g, t, w), gbias = upload(g, t, bias);
        Buf gres(g, NC * es), gy(g, NC * es), gm(g, N * 4), gr(g, N * 4);
        Buf ga2 = upload(g, t, a), gres2(g, NC * es), gy2(g, NC * es), gm2(g, N * 4), gr2(g, N * 4);
        // GPU unfused reference: add then the plain norm
        g.add(gres2.get(), ga2.get(), gb.get(), NC);
        if (rms)
          g.rmsnorm_forward(gy2.get(), gr2.f(), gres2.get(), gw.get(), N, C, 1e-5f);
        else
          g.layernorm_forward(gy2.get(), gm2.f(), gr2.f(), gres2.get(), gw.get(), gbias.get(), N, C, 1e-5f);
        void* gdst = in_place ? ga.get() : gres.get();  // in place: residual_out aliases a
        void* cdst = in_place ? ca.get() : cres.get();
        if (rms) {
          c.residual_rmsnorm_forward(cdst, cy.get(), cr.f(), ca.get(), cb.get(), cw.get(), N, C, 1e-5f);
          g.residual_rmsnorm_forward(gdst, gy.get(), gr.f(), ga.get(), gb.get(), gw.get(), N, C, 1e-5f);
        } else {
          c.residual_layernorm_forward(cdst, cy.get(), cm.f(), cr.f(), ca.get(), cb.get(), cw.get(), cbias.get(), N, C,
                                       1e-5f);
          g.residual_layernorm_forward(gdst, gy.get(), gm.f(), gr.f(), ga.get(), gb.get(), gw.get(), gbias.get(), N, C,
                                       1e-5f);
        }
        const char* what = rms ? "residual rmsnorm" : "residual layernorm";
        // The residual sum is one rounding of the exact fp32 sum on both sides.
        const std::vector<float> residual = rounded(t, download(c, DType::F32, cdst, NC));
        GPTRAIN_CHECK_CLOSE(what << " residual " << dtype_name(t), download(g, t, gdst, NC), residual, 1e-7);
        // The norm reads the residual stream as stored (rounded to bf16/fp16, as in Megatron, where the sum is
        // a tensor of the compute dtype): the reference is the cpu twin's norm of the rounded sum.
        Buf cres_t = upload_f32(c, residual), cy_t(c, NC * 4), cm_t(c, N * 4), cr_t(c, N * 4);
        if (rms)
          c.rmsnorm_forward(cy_t.get(), cr_t.f(), cres_t.get(), cw.get(), N, C, 1e-5f);
        else
          c.layernorm_forward(cy_t.get(), cm_t.f(), cr_t.f(), cres_t.get(), cw.get(), cbias.get(), N, C, 1e-5f);
        if (!rms) GPTRAIN_CHECK_CLOSE("residual ln mean", download_f32(g, gm, N), download_f32(c, cm_t, N), 1e-5);
        GPTRAIN_CHECK_CLOSE(what << " fwd " << dtype_name(t), download(g, t, gy.get(), NC), download_f32(c, cy_t, NC),
                            tol(t));
        GPTRAIN_CHECK_CLOSE(what << " rstd " << dtype_name(t), download_f32(g, gr, N), download_f32(c, cr_t, N), 1e-5);
        // Fused and unfused on the GPU: same kernel maths, same order, same bits.
        Buf* fused_res = in_place ? &ga : &gres;
        CHECK(bytes_of(g, *fused_res, NC * es) == bytes_of(g, gres2, NC * es));
        CHECK(bytes_of(g, gy, NC * es) == bytes_of(g, gy2, NC * es));
        CHECK(bytes_of(g, gr, N * 4) == bytes_of(g, gr2, N * 4));
      }
    }
  }
}

TEST_CASE("gpu linear + GELU forward and backward through GELU vs cpu (epilogue and fallback paths)", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    for (GeluKind kind : {GeluKind::Tanh, GeluKind::Erf}) {
      for (int F : {96, 90}) {  // 90: aux leading dimension not a multiple of 8 -> fallback path
        for (bool with_bias : {true, false}) {
          Twins tw(t);
          Backend& c = *tw.cpu;
          Backend& g = *tw.gpu;
          const int N = 130, C = 64;
          INFO(dtype_name(t) << " gelu " << int(kind) << " F " << F << " bias " << with_bias << " epilogue eligible "
                             << tw.cuda().gelu_epilogue_eligible(F, kind));
          const std::size_t es = dtype_size(t), NF = std::size_t(N) * F;
          std::vector<float> x = rounded(t, randn(std::size_t(N) * C, 51)),
                             w1 = rounded(t, randn(std::size_t(F) * C, 52, 0.15f));
          std::vector<float> b1 = rounded(t, randn(F, 53)), w2 = rounded(t, randn(std::size_t(C) * F, 54, 0.1f));
          std::vector<float> dy = rounded(t, randn(std::size_t(N) * C, 55));
          std::vector<float> dw0 = randn(w2.size(), 56), db0 = randn(C, 57);
          Buf cx = upload_f32(c, x), cw1 = upload_f32(c, w1), cb1 = upload_f32(c, b1), cact(c, NF * 4), cpre(c, NF * 4);
          Buf gx = upload(g, t, x), gw1 = upload(g, t, w1), gb1 = upload(g, t, b1), gact(g, NF * es), gpre(g, NF * es);
          c.matmul_bias_gelu_forward(cact.get(), cpre.get(), cx.get(), cw1.get(), with_bias ? cb1.get() : nullptr, N, C,
                                     F, kind);
          g.matmul_bias_gelu_forward(gact.get(), gpre.get(), gx.get(), gw1.get(), with_bias ? gb1.get() : nullptr, N, C,
                                     F, kind);
          GPTRAIN_CHECK_CLOSE("pre_gelu", download(g, t, gpre.get(), NF), download_f32(c, cpre, NF), tol(t));
          GPTRAIN_CHECK_CLOSE("gelu out", download(g, t, gact.get(), NF), download_f32(c, cact, NF), tol(t));
          // backward of fc2 (C, F) through the GELU; the CPU runs on the GPU's saved activations (rounded),
          // so the comparison measures the backward alone
          std::vector<float> act = download(g, t, gact.get(), NF), pre = download(g, t, gpre.get(), NF);
          Buf cact2 = upload_f32(c, act), cpre2 = upload_f32(c, pre), cw2 = upload_f32(c, w2), cdy = upload_f32(c, dy);
          Buf gw2 = upload(g, t, w2), gdy = upload(g, t, dy);
          Buf cdpre(c, NF * 4), gdpre(g, NF * es);
          Buf cdw = upload_f32(c, dw0), cdb = upload_f32(c, db0), gdw = upload_f32(g, dw0), gdb = upload_f32(g, db0);
          c.matmul_dgelu_backward(cdpre.get(), cdw.f(), with_bias ? cdb.f() : nullptr, cdy.get(), cact2.get(),
                                  cpre2.get(), cw2.get(), N, F, C, kind);
          g.matmul_dgelu_backward(gdpre.get(), gdw.f(), with_bias ? gdb.f() : nullptr, gdy.get(), gact.get(),
                                  gpre.get(), gw2.get(), N, F, C, kind);
          GPTRAIN_CHECK_CLOSE("dpre", download(g, t, gdpre.get(), NF), download_f32(c, cdpre, NF), tol(t));
          GPTRAIN_CHECK_CLOSE("fc2 dweight", download_f32(g, gdw, w2.size()), download_f32(c, cdw, w2.size()), tol(t));
          if (with_bias) GPTRAIN_CHECK_CLOSE("fc2 dbias", download_f32(g, gdb, C), download_f32(c, cdb, C), tol(t));
        }
      }
    }
  }
}

TEST_CASE("gpu gelu epilogue eligibility: tanh, 16-bit, aux width divisible by 8", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins bf(DType::BF16), f32(DType::F32);
  CHECK(bf.cuda().gelu_epilogue_eligible(3072, GeluKind::Tanh));
  CHECK_FALSE(bf.cuda().gelu_epilogue_eligible(3072, GeluKind::Erf));
  CHECK_FALSE(bf.cuda().gelu_epilogue_eligible(3070, GeluKind::Tanh));
  CHECK_FALSE(f32.cuda().gelu_epilogue_eligible(3072, GeluKind::Tanh));
}

TEST_CASE("gpu model: fused ops equal the unfused op sequence (fp32 bit for bit, bf16 within tolerance)", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  StageConfig c;
  c.num_layers = 3, c.hidden_size = 64, c.num_attention_heads = 4, c.seq_length = 64, c.micro_batch_size = 2;
  c.vocab_size = 100, c.hidden_dropout = 0.1f, c.attention_dropout = 0.1f;
  c.finalize(8);  // GPT-2 style: LayerNorm, tanh GELU with biases (F = 256: the epilogue path in bf16)
  for (DType t : {DType::F32, DType::BF16}) {
    INFO(dtype_name(t));
    auto be = make_backend("cuda", t);
    const auto [lu, gu] = model_losses_and_grads(*be, c, false);
    const auto [lf, gf] = model_losses_and_grads(*be, c, true);
    if (t == DType::F32) {  // fp32 never takes the GELU epilogue: the same kernels in the same order
      CHECK(std::memcmp(lu.data(), lf.data(), lu.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(gu.data(), gf.data(), gu.size() * sizeof(float)) == 0);
    }
    GPTRAIN_CHECK_CLOSE("losses fused vs unfused", lf, lu, tol(t));
    GPTRAIN_CHECK_CLOSE("gradients fused vs unfused", gf, gu, t == DType::F32 ? 0.0 : 3e-2);
  }
}
