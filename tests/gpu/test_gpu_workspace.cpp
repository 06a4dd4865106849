// The memory plan's workspace estimate (parallel/plan/backend_workspace.h) is an upper bound of the
// scratch the CUDA backend really holds after training steps: cuBLASLt's workspace, the grow-only
// Workspace of the reductions and flash backward, and cuDNN attention's Workspace less its plan
// workspace (known only at run time, so added here from what the backend saw).
#include <cmath>

#include "core/model/gpt_stage.h"
#include "core/optim/adamw.h"
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
