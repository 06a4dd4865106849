// The memory plan's workspace estimate (parallel/plan/backend_workspace.h) is an upper bound of the
// scratch the CUDA backend really holds after training steps: cuBLASLt's workspace, the grow-only
// Workspace of the reductions and flash backward, and cuDNN attention's Workspace less its plan
// workspace (known only at run time, so added here from what the backend saw). And each op's launcher
// requests exactly what its *_scratch_bytes function (kernels/<op>/<op>.h) says, the figure the plan uses.
#include <cmath>

#include "core/model/gpt_stage.h"
#include "core/optim/adamw.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_cudnn_shape.h"
#include "kernels/cuda/workspace_size.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/embedding/embedding.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/matmul/matmul.h"
#include "kernels/moe/moe.h"
#include "parallel/plan/backend_workspace.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/unit/core/model_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;
using namespace gptrain::parallel;

namespace {

StageConfig tiny(bool llama) {
  StageConfig c;
  // Head size 64, T a multiple of 128 and no attention dropout: a shape cuDNN attention runs.
  c.num_layers = 2, c.hidden_size = 128, c.num_attention_heads = 2, c.seq_length = 128, c.micro_batch_size = 2;
  c.max_position_embeddings = 128, c.vocab_size = 300, c.attention_dropout = 0.0f;
  if (llama) {
    c.num_query_groups = 1;
    test::use_llama_switches(c);
  }
  c.finalize(8);
  return c;
}

void train_steps(Backend& be, const StageConfig& c, int iters) {
  GptStage m(c, be);
  m.init_parameters();
  AdamW opt(be, m.params(), m.layout().total, m.layout().num_decay, AdamWHyper{0.9f, 0.95f, 1e-8f});
  auto a = m.make_activations();
  for (int it = 0; it < iters; ++it) {
    m.zero_grads();
    m.load_batch(*a, test::random_batch(c, 300 + it));
    m.forward(*a, nullptr, true);
    const auto s = m.loss_sum(*a);
    m.backward(*a, nullptr, float(1.0 / s.num_tokens));
    REQUIRE(
        std::isfinite(be.sum_squares(m.grads(), m.layout().total)));  // the grad-norm reduction uses the Workspace too
    opt.step(m.grads(), 1e-3f, 0.1f, 1.0f);
  }
  be.synchronize();
}

}  // namespace

TEST_CASE("gpu workspace: the memory plan's estimate bounds the scratch the backend holds", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (bool llama : {false, true}) {
    for (AttentionBackend att : {AttentionBackend::Auto, AttentionBackend::Flash}) {
      for (bool det : {false, true}) {
        INFO((llama ? "llama-style" : "gpt2-style")
             << " attention " << attention_backend_name(att) << " deterministic " << det);
        const StageConfig c = tiny(llama);
        auto be = make_backend("cuda", DType::BF16, BackendOptions{att, det});
        REQUIRE(be->options().attention == att);
        REQUIRE(be->options().deterministic == det);
        train_steps(*be, c, 3);
        const BackendScratch held = be->scratch_bytes();
        GptStage probe(c, *be);  // only for its parameter count
        const BackendWorkspace est = backend_workspace(c, DType::BF16, workspace_options(*be), probe.layout().total);
        CHECK(held.gemm == est.gemm);
        CHECK(held.scratch > 0);  // the reductions ran
        CHECK(held.scratch <= est.scratch);
        // cuDNN's capacity is at most (plan + known) * 5/4 <= est.attention + round256(plan) * 5/4 + 256.
        const std::size_t plan = (held.attention_plan_max + 255) / 256 * 256;
        CHECK(held.attention <= est.attention + plan + plan / 4 + 256);
        if (att == AttentionBackend::Flash) CHECK(held.attention == 0);
      }
    }
  }
}

namespace {

// The scratch a fresh CUDA backend holds after `run` (one op): a Workspace that has seen a single request r
// holds workspace_grown_capacity(r).
template <typename Run>
BackendScratch scratch_after(Run run, AttentionBackend attention = AttentionBackend::Flash, bool det = false) {
  auto be = make_backend("cuda", DType::BF16, BackendOptions{attention, det});
  run(*be);
  be->synchronize();
  return be->scratch_bytes();
}

// Zeroed device memory: the values do not matter here, only the requests.
Buf zeros(Backend& be, std::size_t bytes) {
  Buf b(be, bytes);
  be.fill_zero(b.get(), bytes);
  return b;
}

}  // namespace

TEST_CASE("gpu workspace: each launcher requests exactly its op's *_scratch_bytes", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  using cuda::workspace_grown_capacity;
  const int N = 1000, C = 96, OC = 300, E = 8, seqs = 2;
  const std::size_t es = 2;  // bf16
  SECTION("layernorm and rmsnorm backward") {
    const std::size_t want = workspace_grown_capacity(cuda::norm_backward_scratch_bytes(N, C));
    for (bool rms : {false, true}) {
      const BackendScratch got = scratch_after([&](Backend& be) {
        Buf act = zeros(be, std::size_t(N) * C * es), w = zeros(be, C * es), g = zeros(be, 2 * C * 4),
            st = zeros(be, 2 * std::size_t(N) * 4);
        if (rms)
          be.rmsnorm_backward(act.get(), g.f(), act.get(), act.get(), w.get(), st.f(), N, C);
        else
          be.layernorm_backward(act.get(), g.f(), g.f() + C, act.get(), act.get(), w.get(), st.f(), st.f() + N, N, C);
      });
      CHECK(got.scratch == want);
    }
  }
  SECTION("bias gradient") {
    const BackendScratch got = scratch_after([&](Backend& be) {
      Buf dout = zeros(be, std::size_t(N) * OC * es), inp = zeros(be, std::size_t(N) * C * es),
          w = zeros(be, std::size_t(OC) * C * es), dw = zeros(be, std::size_t(OC) * C * 4), db = zeros(be, OC * 4);
      be.matmul_backward(nullptr, dw.f(), db.f(), dout.get(), inp.get(), w.get(), N, C, OC, false);
    });
    CHECK(got.scratch == workspace_grown_capacity(cuda::bias_grad_scratch_bytes(N, OC)));
  }
  SECTION("sum of squares") {
    const std::size_t n = (std::size_t(1) << 20) + 3;
    const BackendScratch got = scratch_after([&](Backend& be) {
      Buf x = zeros(be, n * 4);
      be.sum_squares(x.f(), n);
    });
    CHECK(got.scratch == workspace_grown_capacity(cuda::sum_squares_scratch_bytes(n)));
  }
  SECTION("embedding backward: the sort's storage is CUB's, within the plan's bound") {
    const BackendScratch got = scratch_after([&](Backend& be) {
      Buf dout = zeros(be, std::size_t(N) * C * es), ids = zeros(be, std::size_t(N) * 4),
          dwte = zeros(be, std::size_t(10) * C * 4), dwpe = zeros(be, std::size_t(N) * C * 4);
      be.embedding_backward(dwte.f(), dwpe.f(), dout.get(), ids.i(), ids.i(), N, C, 0, 10);
    });
    CHECK(got.scratch > workspace_grown_capacity(cuda::embedding_backward_scratch_bytes(N, 0)));
    CHECK(got.scratch <= workspace_grown_capacity(
                             cuda::embedding_backward_scratch_bytes(N, cuda::embedding_sort_temp_bytes_bound(N))));
  }
  SECTION("own flash backward, FMA (head size 32) and tensor-core (64) kernels") {
    const int B = 2, T = 100, NH = 4, NKV = 2;
    for (int HS : {32, 64}) {
      const BackendScratch got = scratch_after([&](Backend& be) {
        const std::size_t qkv = std::size_t(B) * T * (NH + 2 * NKV) * HS, o = std::size_t(B) * T * NH * HS;
        Buf dqkv = zeros(be, qkv * es), x = zeros(be, qkv * es), out = zeros(be, o * es),
            lse = zeros(be, std::size_t(B) * NH * T * 4);
        be.attention_backward(dqkv.get(), out.get(), x.get(), out.get(), lse.f(), nullptr, B, T, NH, NKV, HS, 0.0f, 1,
                              0);
      });
      INFO("HS " << HS);
      CHECK(got.scratch == workspace_grown_capacity(cuda::flash_attention_backward_scratch_bytes(B, T, NH)));
    }
  }
  SECTION("cuDNN attention backward: its request less the plan workspace cuDNN chose") {
    const int B = 2, T = 128, NH = 4, NKV = 2, HS = 64;
    for (bool det : {false, true}) {
      const BackendScratch got = scratch_after(
          [&](Backend& be) {
            const std::size_t qkv = std::size_t(B) * T * (NH + 2 * NKV) * HS, o = std::size_t(B) * T * NH * HS;
            Buf dqkv = zeros(be, qkv * es), x = zeros(be, qkv * es), out = zeros(be, o * es),
                lse = zeros(be, std::size_t(B) * NH * T * 4);
            be.attention_backward(dqkv.get(), out.get(), x.get(), out.get(), lse.f(), nullptr, B, T, NH, NKV, HS, 0.0f,
                                  1, 0);
          },
          AttentionBackend::Auto, det);
      INFO("deterministic " << det);
      if (got.attention == 0) {
        WARN("cuDNN attention did not run the backward here (the flash backward did): nothing to compare");
        continue;
      }
      CHECK(got.attention ==
            workspace_grown_capacity(cuda::cudnn_attention_backward_scratch_bytes(
                B, T, NH, HS, got.attention_plan_max, cuda::cudnn_attention_backward_accumulates_dq(det))));
    }
  }
  SECTION("MoE: Sinkhorn routing, load-balancing loss and its backward, z-loss") {
    const BackendScratch sinkhorn = scratch_after([&](Backend& be) {
      Buf probs = zeros(be, std::size_t(N) * 4), experts = zeros(be, std::size_t(N) * 4),
          normed = zeros(be, std::size_t(N) * E * 4), logits = zeros(be, std::size_t(N) * E * 4);
      be.moe_sinkhorn_router_forward(probs.f(), experts.i(), normed.f(), logits.f(), N, E, 1, true);
    });
    CHECK(sinkhorn.scratch == workspace_grown_capacity(cuda::moe_sinkhorn_router_scratch_bytes(N, E, true)));
    const BackendScratch balance = scratch_after([&](Backend& be) {
      Buf loss = zeros(be, 4), scores = zeros(be, std::size_t(N) * E * 4), experts = zeros(be, std::size_t(N) * 2 * 4);
      be.moe_load_balancing_loss(loss.f(), scores.f(), experts.i(), N, E, 2, seqs, 1.0f);
    });
    CHECK(balance.scratch == workspace_grown_capacity(cuda::moe_load_balancing_loss_scratch_bytes(E, seqs)));
    const BackendScratch balance_back = scratch_after([&](Backend& be) {
      Buf dscores = zeros(be, std::size_t(N) * E * 4), experts = zeros(be, std::size_t(N) * 2 * 4);
      be.moe_load_balancing_loss_backward(dscores.f(), experts.i(), N, E, 2, seqs, 1.0f);
    });
    CHECK(balance_back.scratch ==
          workspace_grown_capacity(cuda::moe_load_balancing_loss_backward_scratch_bytes(E, seqs)));
    const BackendScratch z = scratch_after([&](Backend& be) {
      Buf loss = zeros(be, 4), logits = zeros(be, std::size_t(N) * E * 4);
      be.moe_z_loss(loss.f(), logits.f(), N, E, 1.0f);
    });
    CHECK(z.scratch == workspace_grown_capacity(cuda::moe_z_loss_scratch_bytes(N)));
  }
}
