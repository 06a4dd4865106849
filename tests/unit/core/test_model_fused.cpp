// The fused backend ops in the model (StageConfig::fused_ops: residual add + norm, linear + GELU) give
// the same losses and gradients as the unfused op sequence, bit for bit on CPU, for every residual form,
// both norms, both GELUs and SwiGLU, with dropout on, on the whole model and on a pipeline split.
#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "model_test_util.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace gptrain;
using namespace gptrain::test;

namespace {

StageConfig fused_base() { return tiny_dropout_config(3); }

struct Result {
  std::vector<float> losses;  // per token
  std::vector<float> grads;   // all parameter gradients (two micro-batches accumulated)
};

// Two micro-batches of forward + backward (gradient accumulation), on the whole model or on two
// pipeline stages split after layer `split` (split > 0).
Result run(StageConfig c, bool fused, int split = 0) {
  c.fused_ops = fused;
  auto be = make_backend("cpu", DType::F32);
  Result r;
  if (split == 0) {
    c.finalize(8);
    GptStage m(c, *be);
    m.init_parameters();
    auto a = m.make_activations();
    m.zero_grads();
    for (uint64_t seed : {5u, 6u}) {
      m.load_batch(*a, random_batch(c, seed));
      m.forward(*a, nullptr, true);
      const auto ls = m.loss_sum(*a);
      r.losses.insert(r.losses.end(), a->host_losses.begin(), a->host_losses.end());
      m.backward(*a, nullptr, float(1.0 / ls.num_tokens));
    }
    r.grads = to_host(*be, m.grads(), m.layout().total);
    return r;
  }
  StageConfig first = c, last = c;
  first.layer_last = split, first.has_head = false;
  last.layer_first = split, last.has_embedding = false;
  first.finalize(8);
  last.finalize(8);
  GptStage m1(first, *be), m2(last, *be);
  m1.init_parameters();
  m2.init_parameters();
  auto a1 = m1.make_activations(), a2 = m2.make_activations();
  m1.zero_grads();
  m2.zero_grads();
  for (uint64_t seed : {5u, 6u}) {
    const HostMicroBatch mb = random_batch(first, seed);
    m1.load_batch(*a1, mb);
    m2.load_batch(*a2, mb);
    m1.forward(*a1, nullptr, true);
    m2.forward(*a2, m1.output(*a1), true);
    const auto ls = m2.loss_sum(*a2);
    r.losses.insert(r.losses.end(), a2->host_losses.begin(), a2->host_losses.end());
    m2.backward(*a2, nullptr, float(1.0 / ls.num_tokens));
    m1.backward(*a1, m2.input_grad(*a2), float(1.0 / ls.num_tokens));
  }
  r.grads = to_host(*be, m1.grads(), m1.layout().total);
  const auto g2 = to_host(*be, m2.grads(), m2.layout().total);
  r.grads.insert(r.grads.end(), g2.begin(), g2.end());
  return r;
}

void check_fused_equals_unfused(const StageConfig& c, int split = 0) {
  const Result u = run(c, false, split), f = run(c, true, split);
  REQUIRE(u.losses.size() == f.losses.size());
  REQUIRE(u.grads.size() == f.grads.size());
  double max_loss_diff = 0, max_grad_diff = 0, grad_norm = 0;
  for (std::size_t i = 0; i < u.losses.size(); ++i)
    max_loss_diff = std::max(max_loss_diff, std::abs(double(u.losses[i]) - f.losses[i]));
  for (std::size_t i = 0; i < u.grads.size(); ++i) {
    max_grad_diff = std::max(max_grad_diff, std::abs(double(u.grads[i]) - f.grads[i]));
    grad_norm += double(u.grads[i]) * u.grads[i];
  }
  INFO("max |loss diff| " << max_loss_diff << ", max |grad diff| " << max_grad_diff << ", |grad| "
                          << std::sqrt(grad_norm));
  REQUIRE(grad_norm > 0);  // a real backward ran
  CHECK(std::memcmp(u.losses.data(), f.losses.data(), u.losses.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(u.grads.data(), f.grads.data(), u.grads.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("fused ops: GPT-2 (LayerNorm, tanh GELU, biases) equals the unfused model bit for bit") {
  check_fused_equals_unfused(fused_base());
}

TEST_CASE("fused ops: Llama (RMSNorm, SwiGLU, no biases) equals the unfused model bit for bit") {
  StageConfig c = fused_base();
  test::use_llama_switches(c);
  c.ffn_hidden_size = 48;
  c.num_query_groups = 2;
  check_fused_equals_unfused(c);
}

TEST_CASE("fused ops: NeoX (two norms, erf GELU) and GPT-J (shared norm) equal the unfused model bit for bit") {
  StageConfig neox = fused_base();
  test::use_neox_switches(neox);
  check_fused_equals_unfused(neox);
  StageConfig gptj = fused_base();
  test::use_gptj_switches(gptj);
  check_fused_equals_unfused(gptj);
}

TEST_CASE("fused ops: a pipeline split (the stage boundary is not fused) equals the unfused split and the whole") {
  const StageConfig c = fused_base();
  check_fused_equals_unfused(c, 1);
  const Result whole = run(c, true), split = run(c, true, 2);
  REQUIRE(std::memcmp(whole.losses.data(), split.losses.data(), whole.losses.size() * sizeof(float)) == 0);
}
