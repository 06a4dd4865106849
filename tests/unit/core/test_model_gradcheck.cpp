// Whole-model gradient checks: for every parameter tensor, the analytic gradient along a random
// direction matches a central finite difference of the loss, in several switch combinations
// (GPT-2, Llama, NeoX, GPT-J with both bias layouts, no positions with document masks, zero-centred
// norm weights, per-head Q/K norms, Gemma's GeGLU with scaled embeddings), dropout on.
#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "model_test_util.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace gptrain;
using namespace gptrain::test;

namespace {

StageConfig gradcheck_base() {
  StageConfig c;
  c.num_layers = 2;
  c.hidden_size = 16;
  c.num_attention_heads = 4;
  c.seq_length = 6;
  c.micro_batch_size = 2;
  c.vocab_size = 23;         // padded to 24: one padding column
  c.init_method_std = 0.3f;  // large enough weights for gradients well above fp32 noise
  c.hidden_dropout = 0.1f;
  c.attention_dropout = 0.1f;
  return c;
}

void check_gradients(StageConfig c, bool segments = false) {
  c.finalize(8);
  auto be = make_backend("cpu", DType::F32);
  GptStage m(c, *be);
  m.init_parameters();
  auto acts = m.make_activations();
  HostMicroBatch mb = random_batch(c, 42);
  if (segments) {  // two documents per row, positions restarting at each
    mb.segment_ids.resize(mb.tokens.size());
    for (std::size_t i = 0; i < mb.tokens.size(); ++i) {
      const int t = int(i % c.seq_length);
      mb.segment_ids[i] = t < 3 ? 0 : 1;
      mb.position_ids[i] = t < 3 ? t : t - 3;
    }
  }
  m.load_batch(*acts, mb);
  m.forward(*acts, nullptr, true);
  const auto ls = m.loss_sum(*acts);
  m.zero_grads();
  m.backward(*acts, nullptr, float(1.0 / ls.num_tokens));
  const std::size_t n = m.layout().total;
  const std::vector<float> grads = to_host(*be, m.grads(), n);
  std::vector<float> params = to_host(*be, m.params(), n);
  std::mt19937_64 rng(3);
  const float eps = 1e-3f;
  for (const auto& t : m.layout().tensors) {
    std::vector<float> d(t.numel);
    double analytic = 0;
    for (std::size_t i = 0; i < t.numel; ++i) {
      d[i] = (rng() & 1) ? 1.0f : -1.0f;
      analytic += double(d[i]) * grads[t.offset + i];
    }
    auto loss_at = [&](float sign) {
      std::vector<float> p = params;
      for (std::size_t i = 0; i < t.numel; ++i) p[t.offset + i] += sign * eps * d[i];
      be->copy_to_device(m.params(), p.data(), n * sizeof(float));
      return mean_loss(m, *acts, true);
    };
    const double numeric = (loss_at(1) - loss_at(-1)) / (2 * eps);
    INFO(t.name << ": analytic " << analytic << " numeric " << numeric);
    CHECK(std::abs(analytic - numeric) <= 1e-2 * std::abs(numeric) + 1e-3);
    be->copy_to_device(m.params(), params.data(), n * sizeof(float));
  }
}

}  // namespace

TEST_CASE("model gradcheck: GPT-2 (LayerNorm, learned positions, tanh GELU, biases, tied)") {
  check_gradients(gradcheck_base());
}

TEST_CASE("model gradcheck: Llama (RMSNorm, rope, SwiGLU, GQA, no biases, untied)") {
  StageConfig c = gradcheck_base();
  test::use_llama_switches(c);
  c.ffn_hidden_size = 24;
  c.num_query_groups = 2;
  check_gradients(c);
}

TEST_CASE("model gradcheck: NeoX (two norms, partial rope, erf GELU, qkv bias only)") {
  StageConfig c = gradcheck_base();
  test::use_neox_switches(c);
  check_gradients(c);
}

TEST_CASE("model gradcheck: GPT-J (shared norm, interleaved partial rope, output bias)") {
  StageConfig c = gradcheck_base();
  test::use_gptj_switches(c);
  c.kv_channels = 8;  // != hidden / heads
  check_gradients(c);
}

TEST_CASE("model gradcheck: GPT-J bias layout (--disable-bias-attention: MLP biases only)") {
  StageConfig c = gradcheck_base();
  test::use_gptj_switches(c);
  c.disable_bias_attention = true;
  check_gradients(c);
}

TEST_CASE("model gradcheck: no position embedding, document attention masks") {
  StageConfig c = gradcheck_base();
  c.position_embedding = PositionEmbedding::None;
  check_gradients(c, true);
}

TEST_CASE("model gradcheck: zero-centred norm weights (--apply-layernorm-1p), LayerNorm and RMSNorm") {
  StageConfig c = gradcheck_base();
  c.apply_layernorm_1p = true;
  check_gradients(c);
  test::use_llama_switches(c);
  c.ffn_hidden_size = 24;
  check_gradients(c);
}

TEST_CASE("model gradcheck: per-head Q/K RMSNorm (--qk-layernorm, Qwen3), GQA, head dim != hidden / heads") {
  StageConfig c = gradcheck_base();
  test::use_llama_switches(c);
  c.ffn_hidden_size = 24;
  c.num_query_groups = 2;
  c.kv_channels = 8;
  c.qk_layernorm = true;
  check_gradients(c);
  c.apply_layernorm_1p = true;  // the per-head norms store gamma - 1 as well
  check_gradients(c);
}

TEST_CASE("model config: --qk-layernorm is RMSNorm only, LayerNorm is refused by name") {
  StageConfig c = gradcheck_base();
  c.qk_layernorm = true;
  REQUIRE_THROWS_WITH(c.finalize(8), Catch::Contains("--qk-layernorm with --normalization LayerNorm"));
}

TEST_CASE("model gradcheck: --squared-relu MLP (fused ops on and off)") {
  StageConfig c = gradcheck_base();
  c.squared_relu = true;
  check_gradients(c);
  c.fused_ops = false;
  check_gradients(c);
}

TEST_CASE("model gradcheck: Gemma (GeGLU, embeddings * sqrt(hidden), tied head, head dim != hidden / heads, MQA)") {
  StageConfig c = gradcheck_base();
  test::use_llama_switches(c);
  c.swiglu = false;
  c.geglu = true;
  c.scale_embeddings_by_sqrt_hidden = true;
  c.untie_embeddings_and_output_weights = false;
  c.apply_layernorm_1p = true;
  c.kv_channels = 8;
  c.num_query_groups = 1;
  c.ffn_hidden_size = 24;
  check_gradients(c);
  c.gelu = GeluKind::Erf;
  check_gradients(c);
}
