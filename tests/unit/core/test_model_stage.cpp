// Model properties beyond gradients: a fresh model predicts ~uniformly over the real vocabulary
// (loss ~ ln(vocab), padding columns get no mass); a two-stage pipeline split computes the same loss
// and gradients as the whole model; eval mode ignores dropout; forward is deterministic.
#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "model_test_util.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace gptrain;
using namespace gptrain::test;

TEST_CASE("model: fresh GPT-2-vocab model has loss ~ ln(50257)") {
  StageConfig c;
  c.num_layers = 1, c.hidden_size = 32, c.num_attention_heads = 2, c.seq_length = 16, c.micro_batch_size = 2;
  c.vocab_size = 50257;
  c.finalize(128);
  REQUIRE(c.padded_vocab_size == 50304);
  auto be = make_backend("cpu", DType::F32);
  GptStage m(c, *be);
  m.init_parameters();
  auto a = m.make_activations();
  m.load_batch(*a, random_batch(c, 1, false));
  const double loss = mean_loss(m, *a, false);
  REQUIRE(std::abs(loss - std::log(50257.0)) < 0.02);  // ln(50304) would be 0.00093 higher; std 0.02 logits add ~1e-3
}

TEST_CASE("model: two pipeline stages equal the whole model (loss and gradients)") {
  StageConfig c;
  c.num_layers = 4, c.hidden_size = 16, c.num_attention_heads = 2, c.seq_length = 8, c.micro_batch_size = 2;
  c.vocab_size = 30, c.hidden_dropout = 0.1f, c.attention_dropout = 0.1f;
  StageConfig whole = c, first = c, last = c;
  whole.finalize(8);
  first.layer_last = 3, first.has_head = false;
  first.finalize(8);
  last.layer_first = 3, last.has_embedding = false;
  last.finalize(8);
  auto be = make_backend("cpu", DType::F32);
  GptStage mw(whole, *be), m1(first, *be), m2(last, *be);
  for (GptStage* m : {&mw, &m1, &m2}) m->init_parameters();
  auto aw = mw.make_activations(), a1 = m1.make_activations(), a2 = m2.make_activations();
  const HostMicroBatch mb = random_batch(whole, 9);
  for (auto [m, a] : {std::pair{&mw, aw.get()}, {&m1, a1.get()}, {&m2, a2.get()}}) m->load_batch(*a, mb);

  mw.forward(*aw, nullptr, true);
  m1.forward(*a1, nullptr, true);
  m2.forward(*a2, m1.output(*a1), true);
  const auto lw = mw.loss_sum(*aw), l2 = m2.loss_sum(*a2);
  REQUIRE(lw.loss_sum == l2.loss_sum);
  const float w = float(1.0 / lw.num_tokens);
  mw.backward(*aw, nullptr, w);
  m2.backward(*a2, nullptr, w);
  m1.backward(*a1, m2.input_grad(*a2), w);

  const auto gw = to_host(*be, mw.grads(), mw.layout().total);
  const auto g1 = to_host(*be, m1.grads(), m1.layout().total);
  const auto g2 = to_host(*be, m2.grads(), m2.layout().total);
  for (const auto& t : mw.layout().tensors) {
    INFO(t.name);
    const ParamTensor* t1 = m1.layout().find(t.name);
    const ParamTensor* t2 = m2.layout().find(t.name);
    REQUIRE((t1 || t2));
    for (std::size_t i = 0; i < t.numel; ++i) {
      const float split = (t1 ? g1[t1->offset + i] : 0.0f) + (t2 ? g2[t2->offset + i] : 0.0f);
      REQUIRE(split == Approx(gw[t.offset + i]).margin(1e-7).epsilon(1e-5));
    }
  }
  REQUIRE(m2.layout().at("embedding.word_embeddings.weight").tied_copy);
}

TEST_CASE("model: eval ignores dropout, training draws it from the micro-batch seed") {
  StageConfig c;
  c.num_layers = 2, c.hidden_size = 16, c.num_attention_heads = 2, c.seq_length = 8, c.micro_batch_size = 1;
  c.vocab_size = 30;
  c.finalize(8);
  auto be = make_backend("cpu", DType::F32);
  GptStage m(c, *be);
  m.init_parameters();
  auto a = m.make_activations();
  HostMicroBatch mb = random_batch(c, 5);
  m.load_batch(*a, mb);
  const double eval1 = mean_loss(m, *a, false), train1 = mean_loss(m, *a, true), train2 = mean_loss(m, *a, true);
  REQUIRE(train1 == train2);
  REQUIRE(train1 != eval1);
  mb.dropout_seed += 1;
  m.load_batch(*a, mb);
  REQUIRE(mean_loss(m, *a, true) != train1);
  REQUIRE(mean_loss(m, *a, false) == eval1);
}
