// Whole-model GPU vs CPU: a tiny GPT (GPT-2 style and Llama style) on the CUDA backend
// against the same model on the CPU backend: loss and every parameter gradient in fp32 (dropout on,
// same Philox masks), 20 AdamW training iterations in fp32 (loss curve), the bf16 loss curve within
// tolerance of the fp32 one, and two bf16 runs giving the same bits; activation offloading (copy stream,
// pinned buffers) gives the bits of the run without it, optimizer offloading (the CPU AdamW) a loss
// curve within rounding of it; FP8 linear GEMMs (hybrid, tensorwise) against the cpu twin.
#include <cmath>

#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "core/optim/adamw.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/unit/core/model_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

namespace {

StageConfig tiny(bool llama) {
  StageConfig c;
  c.num_layers = 2, c.hidden_size = 64, c.num_attention_heads = 4, c.seq_length = 64, c.micro_batch_size = 2;
  c.vocab_size = 100, c.hidden_dropout = 0.1f, c.attention_dropout = 0.1f;
  if (llama) {
    c.num_query_groups = 2;
    test::use_llama_switches(c);
  }
  c.finalize(8);
  return c;
}

// Loss of one micro-batch and the gradients it leaves (fp32 host copies).
struct StepResult {
  double loss = 0;
  std::vector<float> grads;
};

StepResult loss_and_grads(Backend& be, const StageConfig& c, const HostMicroBatch& mb) {
  GptStage m(c, be);
  m.init_parameters();
  m.zero_grads();
  auto a = m.make_activations();
  m.load_batch(*a, mb);
  m.forward(*a, nullptr, true);
  const auto s = m.loss_sum(*a);
  m.backward(*a, nullptr, float(1.0 / s.num_tokens));
  be.synchronize();
  return {s.loss_sum / s.num_tokens, test::to_host(be, m.grads(), m.layout().total)};
}

// A fresh batch whose labels follow from the tokens (label = 7 token + 3 mod vocab): a map the model
// learns within a few AdamW steps, unlike random labels, whose loss cannot fall below ln(vocab).
HostMicroBatch learnable_batch(const StageConfig& c, uint64_t seed) {
  HostMicroBatch mb = test::random_batch(c, seed);
  for (std::size_t i = 0; i < mb.tokens.size(); ++i) mb.labels[i] = (mb.tokens[i] * 7 + 3) % c.vocab_size;
  return mb;
}

// Losses of `iters` AdamW steps (one micro-batch per step, fresh learnable batch each step); the final
// parameters (fp32 host copy of the master weights) in *params when given.
// host_fraction: the optimizer state kept and stepped on the host (--optimizer-cpu-offload).
std::vector<double> train(Backend& be, const StageConfig& c, int iters, std::vector<float>* params = nullptr,
                          double host_fraction = 0.0) {
  GptStage m(c, be);
  m.init_parameters();
  const std::size_t n = m.layout().total;
  AdamW opt(be, m.params(), n, decay_split_ranges(n, m.layout().num_decay), AdamWHyper{0.9f, 0.95f, 1e-8f},
            {AdamW::Piece{0, n, 0}}, n, host_fraction);
  auto a = m.make_activations();
  std::vector<double> losses;
  for (int it = 0; it < iters; ++it) {
    m.zero_grads();
    m.load_batch(*a, learnable_batch(c, 100 + it));
    m.forward(*a, nullptr, true);
    const auto s = m.loss_sum(*a);
    m.backward(*a, nullptr, float(1.0 / s.num_tokens));
    opt.step(m.grads(), 1e-3f, 0.1f, 1.0f);
    losses.push_back(s.loss_sum / s.num_tokens);
  }
  if (params && opt.has_separate_master()) {
    params->assign(m.layout().total, 0.0f);
    opt.state_to_host(2, params->data());
  } else if (params) {
    *params = test::to_host(be, static_cast<const float*>(m.params()), m.layout().total);
  }
  return losses;
}

}  // namespace

TEST_CASE("gpu model fp32: loss and all gradients match the cpu model (GPT-2 and Llama styles)", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (bool llama : {false, true}) {
    INFO((llama ? "llama-style" : "gpt2-style"));
    const StageConfig c = tiny(llama);
    const HostMicroBatch mb = test::random_batch(c, 5);
    auto cpu = make_backend("cpu", DType::F32);
    auto gpu = make_backend("cuda", DType::F32);
    const StepResult rc = loss_and_grads(*cpu, c, mb), rg = loss_and_grads(*gpu, c, mb);
    CHECK(std::fabs(rg.loss - rc.loss) / rc.loss < 1e-5);
    // A chain of ~30 fp32 ops: 1e-4 on the whole gradient vector (each op alone is checked at 1e-5).
    GPTRAIN_CHECK_CLOSE("model grads", rg.grads, rc.grads, 1e-4);
  }
}

TEST_CASE("gpu model: 20 training iterations fp32 match cpu, bf16 loss curve close to fp32, bf16 deterministic",
          "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  const StageConfig c = tiny(false);
  auto cpu = make_backend("cpu", DType::F32);
  auto g32 = make_backend("cuda", DType::F32);
  const std::vector<double> lc = train(*cpu, c, 20), lg = train(*g32, c, 20);
  for (int i = 0; i < 20; ++i) {
    INFO("iteration " << i + 1 << " cpu " << lc[i] << " gpu fp32 " << lg[i]);
    CHECK(std::fabs(lg[i] - lc[i]) / lc[i] < 1e-4);
  }
  CHECK(lc.back() < lc.front() - 0.1);  // it learns: the comparison is not between two flat curves

  auto gb = make_backend("cuda", DType::BF16, BackendOptions{AttentionBackend::Auto, true});
  std::vector<float> p1, p2;
  const std::vector<double> lb = train(*gb, c, 20, &p1);
  for (int i = 0; i < 20; ++i) {
    INFO("iteration " << i + 1 << " fp32 " << lg[i] << " bf16 " << lb[i]);
    CHECK(std::fabs(lb[i] - lg[i]) < 0.05 + 0.02 * lg[i]);
  }
  const std::vector<double> lb2 = train(*gb, c, 20, &p2);
  CHECK(lb2 == lb);
  REQUIRE(p1.size() == p2.size());
  CHECK(std::memcmp(p1.data(), p2.data(), 4 * p1.size()) == 0);
}

// FP8 training's linear path (core/model/fp8_linear.h) through the CUDA twins of fp8_cast_transpose and
// fp8_gemm (sm_89+; the GEMMs whose dimensions are not multiples of 16, and every GEMM below sm_89, through
// fp8_dequantize and the ordinary matmul): with fp32 compute the quantised operands are the CPU's (up to codes
// at a rounding midpoint, which the GEMMs' other summation order can move), so loss and gradients stay close;
// with bf16 compute the FP8 loss curve (tensorwise scaling: no step update needed) follows the fp32 one.
TEST_CASE("gpu model fp8: hybrid FP8 linear GEMMs match the cpu model, the bf16 FP8 curve follows fp32", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  StageConfig c = tiny(false);
  c.fp8.enabled = true;
  c.fp8.hybrid = true;
  c.fp8.recipe = Fp8Recipe::Tensorwise;
  const HostMicroBatch mb = test::random_batch(c, 5);
  auto cpu = make_backend("cpu", DType::F32);
  auto gpu = make_backend("cuda", DType::F32);
  const StepResult rc = loss_and_grads(*cpu, c, mb), rg = loss_and_grads(*gpu, c, mb);
  CHECK(std::fabs(rg.loss - rc.loss) / rc.loss < 1e-3);
  GPTRAIN_CHECK_CLOSE("fp8 model grads", rg.grads, rc.grads, 2e-2);

  const std::vector<double> lc = train(*cpu, c, 20);
  auto gb = make_backend("cuda", DType::BF16, BackendOptions{AttentionBackend::Auto, true});
  const std::vector<double> lb = train(*gb, c, 20);
  for (int i = 0; i < 20; ++i) {
    INFO("iteration " << i + 1 << " cpu fp8 " << lc[i] << " gpu bf16 fp8 " << lb[i]);
    CHECK(std::fabs(lb[i] - lc[i]) < 0.05 + 0.02 * lc[i]);
  }
  CHECK(lc.back() < lc.front() - 0.1);
}

TEST_CASE("gpu offloading: activations through the copy stream change no bit, the host AdamW follows the curve",
          "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  StageConfig c = tiny(false);
  c.num_layers = 4;
  c.layer_last = -1;
  c.finalize(8);
  auto gb = make_backend("cuda", DType::BF16, BackendOptions{AttentionBackend::Auto, true});
  std::vector<float> kept, offloaded, host_opt;
  const std::vector<double> lk = train(*gb, c, 10, &kept);
  StageConfig off = c;
  off.cpu_offload_layers = 3;  // three units: every staging slot in use
  const std::vector<double> lo = train(*gb, off, 10, &offloaded);
  CHECK(lo == lk);
  REQUIRE(offloaded.size() == kept.size());
  CHECK(std::memcmp(offloaded.data(), kept.data(), 4 * kept.size()) == 0);
  const std::vector<double> lh = train(*gb, c, 10, &host_opt, 0.5);
  for (int i = 0; i < 10; ++i) {
    INFO("iteration " << i + 1 << " device AdamW " << lk[i] << " half on the host " << lh[i]);
    CHECK(std::fabs(lh[i] - lk[i]) < 1e-3 * lk[i]);  // the CPU and GPU AdamW round alike up to FMA contraction
  }
}
