// --apply-layernorm-1p at the model level: norm weights start at 0 (gamma - 1) while every other
// tensor gets the plain model's init, and a model whose norm weights are w computes the same loss and
// the same gradients, bit for bit, as the plain model with norm weights 1 + w (d/dw = d/dgamma).
#include "core/model/gpt_stage.h"
#include "core/model/param_layout.h"
#include "core/model/stage_activations.h"
#include "model_test_util.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace gptrain;
using namespace gptrain::test;

namespace {

StageConfig tiny(bool llama, bool one_p) {
  StageConfig c;
  c.num_layers = 2, c.hidden_size = 16, c.num_attention_heads = 4, c.seq_length = 6, c.micro_batch_size = 2;
  c.vocab_size = 23;
  c.init_method_std = 0.3f;
  if (llama) {
    use_llama_switches(c);
    c.ffn_hidden_size = 24;
  }
  c.apply_layernorm_1p = one_p;
  c.finalize(8);
  return c;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("apply-layernorm-1p: zero init of the norm weights, same loss and gradients as gamma = 1 + w") {
  for (bool llama : {false, true}) {
    INFO((llama ? "RMSNorm (llama)" : "LayerNorm (gpt2)"));
    auto be = make_backend("cpu", DType::F32);
    GptStage plain(tiny(llama, false), *be), one_p(tiny(llama, true), *be);
    plain.init_parameters();
    one_p.init_parameters();
    const std::size_t n = plain.layout().total;
    REQUIRE(one_p.layout().total == n);
    std::vector<float> pp = to_host(*be, plain.params(), n), op = to_host(*be, one_p.params(), n);
    // Init: norms 1 (plain) and 0 (1p); all else identical. Then random stored w, gamma = 1 + w.
    std::mt19937 rng(5);
    std::normal_distribution<float> d(0.0f, 0.3f);
    int norms = 0;
    for (const auto& t : plain.layout().tensors) {
      const ParamTensor& u = one_p.layout().at(t.name);
      REQUIRE(u.offset == t.offset);
      for (std::size_t i = 0; i < t.numel; ++i) {
        if (is_norm_weight(t.name)) {
          REQUIRE(pp[t.offset + i] == 1.0f);
          REQUIRE(op[t.offset + i] == 0.0f);
          op[t.offset + i] = d(rng);
          pp[t.offset + i] = 1.0f + op[t.offset + i];
        } else {
          REQUIRE(pp[t.offset + i] == op[t.offset + i]);
        }
      }
      norms += is_norm_weight(t.name);
    }
    REQUIRE(norms == 5);  // two layers x (input, pre-MLP) + final
    be->copy_to_device(plain.params(), pp.data(), n * sizeof(float));
    be->copy_to_device(one_p.params(), op.data(), n * sizeof(float));

    const HostMicroBatch mb = random_batch(plain.config(), 9);
    std::vector<float> grads[2];
    double loss[2];
    GptStage* models[2] = {&plain, &one_p};
    for (int k = 0; k < 2; ++k) {
      auto acts = models[k]->make_activations();
      models[k]->load_batch(*acts, mb);
      models[k]->forward(*acts, nullptr, true);
      const auto ls = models[k]->loss_sum(*acts);
      loss[k] = ls.loss_sum;
      models[k]->zero_grads();
      models[k]->backward(*acts, nullptr, float(1.0 / ls.num_tokens));
      grads[k] = to_host(*be, models[k]->grads(), n);
    }
    REQUIRE(loss[0] == loss[1]);
    REQUIRE(same_bits(grads[0], grads[1]));
    // and the flag matters: the plain model reading the stored w computes another loss
    be->copy_to_device(plain.params(), op.data(), n * sizeof(float));
    auto acts = plain.make_activations();
    plain.load_batch(*acts, mb);
    plain.forward(*acts, nullptr, true);
    REQUIRE(std::abs(plain.loss_sum(*acts).loss_sum - loss[1]) > 1e-3 * std::abs(loss[1]));
  }
}
