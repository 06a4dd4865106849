// core/hf helpers and the checkpoint "model" JSON: permutations against their index definitions.
#include "core/checkpoint/model_json.h"
#include "core/common/error.h"
#include "core/hf/adapter.h"
#include "core/hf/tensor_ops.h"

#include <catch2/catch.hpp>

#include <numeric>

namespace hf = gptrain::hf;

TEST_CASE("hf: rope permutation maps interleaved row 2j+c to half-split row c*rd/2+j and back") {
  const int64_t heads = 2, hd = 8, rd = 4, cols = 3;  // partial rotary: rows 4..7 of each head pass through
  std::vector<float> w(heads * hd * cols);
  std::iota(w.begin(), w.end(), 0.0f);
  const auto half = hf::rope_interleaved_to_half(w, heads, hd, rd, cols);
  for (int64_t h = 0; h < heads; ++h) {
    for (int64_t j = 0; j < rd / 2; ++j)
      for (int64_t c = 0; c < 2; ++c)
        for (int64_t k = 0; k < cols; ++k)
          REQUIRE(half[(h * hd + c * rd / 2 + j) * cols + k] == w[(h * hd + 2 * j + c) * cols + k]);
    for (int64_t r = rd; r < hd; ++r)
      for (int64_t k = 0; k < cols; ++k) REQUIRE(half[(h * hd + r) * cols + k] == w[(h * hd + r) * cols + k]);
  }
  REQUIRE(half != w);
  REQUIRE(hf::rope_half_to_interleaved(half, heads, hd, rd, cols) == w);
}

TEST_CASE("hf: transpose, take_rows, pad_rows") {
  std::vector<float> x = {1, 2, 3, 4, 5, 6};  // (2, 3)
  REQUIRE(hf::transpose(x, 2, 3) == std::vector<float>{1, 4, 2, 5, 3, 6});
  REQUIRE(hf::transpose(hf::transpose(x, 2, 3), 3, 2) == x);
  std::vector<float> big(70 * 45);
  std::iota(big.begin(), big.end(), 0.0f);
  const auto t = hf::transpose(big, 70, 45);
  REQUIRE(t[44 * 70 + 69] == big[69 * 45 + 44]);
  REQUIRE(t[3 * 70 + 50] == big[50 * 45 + 3]);
  REQUIRE(hf::take_rows(x, 1, 3) == std::vector<float>{1, 2, 3});
  REQUIRE(hf::pad_rows(x, 3, 3) == std::vector<float>{1, 2, 3, 4, 5, 6, 0, 0, 0});
}

TEST_CASE("hf: model JSON round trip and adapter lookup errors") {
  gptrain::checkpoint::ModelDescription m;
  m.family = "llama";
  auto& c = m.config;
  c.num_layers = 2;
  c.hidden_size = 64;
  c.num_attention_heads = 4;
  c.num_query_groups = 2;
  c.seq_length = 32;
  c.vocab_size = 1000;
  c.normalization = gptrain::Normalization::RMSNorm;
  c.position_embedding = gptrain::PositionEmbedding::Rope;
  c.rotary_interleaved = true;
  c.swiglu = true;
  c.ffn_hidden_size = 160;
  c.gelu = gptrain::GeluKind::Erf;
  c.parallel_residual = gptrain::ParallelResidual::TwoNorms;
  c.finalize(128);
  const auto j = gptrain::checkpoint::model_to_json(m);
  const auto back = gptrain::checkpoint::model_from_json(j, "test");
  REQUIRE(gptrain::checkpoint::model_to_json(back) == j);
  REQUIRE(j["padded_vocab_size"] == 1024);
  REQUIRE(j["normalization"] == "RMSNorm");
  REQUIRE(j["parallel_residual"] == "two_norms");
  // A checkpoint written before disable_bias_attention existed loads as "attention biases on".
  auto old = j;
  old.erase("disable_bias_attention");
  REQUIRE_FALSE(gptrain::checkpoint::model_from_json(old, "old.json").config.disable_bias_attention);
  auto gptj = j;
  gptj["disable_bias_attention"] = true;
  REQUIRE(gptrain::checkpoint::model_from_json(gptj, "new.json").config.disable_bias_attention);
  auto broken = j;
  broken.erase("hidden_size");
  REQUIRE_THROWS_WITH(gptrain::checkpoint::model_from_json(broken, "meta.json"),
                      Catch::Contains("meta.json") && Catch::Contains("hidden_size"));
  broken = j;
  broken["gelu"] = "relu";
  REQUIRE_THROWS_WITH(gptrain::checkpoint::model_from_json(broken, "meta.json"), Catch::Contains("relu"));
  REQUIRE(std::string(hf::adapter_for_family("gpt2").model_type()) == "gpt2");
  REQUIRE(std::string(hf::adapter_for_family("gpt_neox").model_type()) == "gpt_neox");
  REQUIRE(std::string(hf::adapter_for_model_type("gptj").family()) == "gptj");
  REQUIRE(std::string(hf::adapter_for_model_type("llama").family()) == "llama");
  REQUIRE_THROWS_WITH(hf::adapter_for_family("bert"), Catch::Contains("bert") && Catch::Contains("gpt2"));
  REQUIRE_THROWS_WITH(hf::adapter_for_model_type("t5"), Catch::Contains("t5"));
}

TEST_CASE("hf: config.json fields of the wrong JSON type are refused naming the file and key") {
  const hf::Adapter& gpt2 = hf::adapter_for_model_type("gpt2");
  const nlohmann::json good = {{"model_type", "gpt2"}, {"n_layer", 2},      {"n_embd", 64},
                               {"n_head", 4},          {"vocab_size", 100}, {"n_positions", 32}};
  REQUIRE(gpt2.from_hf_config(good, "cfg/config.json").config.num_layers == 2);
  const std::vector<std::pair<const char*, nlohmann::json>> bad = {
      {"n_layer", "two"},         {"n_layer", 2.5},           {"n_head", true},  {"layer_norm_epsilon", "1e-5"},
      {"tie_word_embeddings", 1}, {"activation_function", 3}, {"n_inner", "256"}};
  for (const auto& [key, value] : bad) {
    nlohmann::json j = good;
    j[key] = value;
    INFO(key << " = " << value.dump());
    REQUIRE_THROWS_WITH(gpt2.from_hf_config(j, "cfg/config.json"),
                        Catch::Contains("cfg/config.json: \"" + std::string(key) + "\" is " + value.dump()) &&
                            Catch::Contains("expected"));
  }
}

TEST_CASE("hf: Gemma's config.json, its defaults and the fields gptrain refuses by name; gemma2 is refused") {
  const hf::Adapter& gemma = hf::adapter_for_model_type("gemma");
  const nlohmann::json good = {{"model_type", "gemma"},    {"num_hidden_layers", 2},       {"hidden_size", 64},
                               {"num_attention_heads", 4}, {"num_key_value_heads", 1},     {"intermediate_size", 96},
                               {"vocab_size", 100},        {"max_position_embeddings", 32}};
  const auto c = gemma.from_hf_config(good, "cfg/config.json").config;
  REQUIRE(c.kv_channels == 256);  // GemmaConfig's head_dim default, not hidden / heads
  REQUIRE(c.tied_head());         // tie_word_embeddings defaults to true
  REQUIRE((c.geglu && !c.swiglu && c.gelu == gptrain::GeluKind::Tanh && c.scale_embeddings_by_sqrt_hidden));
  REQUIRE(c.norm_epsilon == 1e-6f);
  nlohmann::json legacy = good;
  legacy["hidden_act"] = "gelu";  // ignored when hidden_activation is null, as transformers does
  REQUIRE(gemma.from_hf_config(legacy, "cfg/config.json").config.geglu);
  const std::vector<std::tuple<const char*, nlohmann::json, const char*>> bad = {
      {"hidden_activation", "gelu", "hidden_activation \"gelu\" is not supported"},
      {"hidden_activation", "silu", "hidden_activation \"silu\" is not supported"},
      {"attention_bias", true, "attention_bias true is not supported"},
      {"tie_word_embeddings", false, "tie_word_embeddings false is not supported"},
      {"rope_scaling", {{"type", "linear"}, {"factor", 2.0}}, "rope_scaling"}};
  for (const auto& [key, value, message] : bad) {
    nlohmann::json j = good;
    j[key] = value;
    INFO(key << " = " << value.dump());
    REQUIRE_THROWS_WITH(gemma.from_hf_config(j, "cfg/config.json"),
                        Catch::Contains("cfg/config.json: ") && Catch::Contains(message));
  }
  // Export: a model without Gemma's switches is refused naming the one missing; other families refuse GeGLU.
  auto desc = gemma.from_hf_config(good, "cfg/config.json");
  desc.config.scale_embeddings_by_sqrt_hidden = false;
  REQUIRE_THROWS_WITH(gemma.hf_config(desc), Catch::Contains("GemmaForCausalLM cannot express this model") &&
                                                 Catch::Contains("--scale-embeddings-by-sqrt-hidden"));
  REQUIRE_THROWS_WITH(hf::adapter_for_family("llama").hf_config(gemma.from_hf_config(good, "c")),
                      Catch::Contains("SwiGLU"));
  REQUIRE_THROWS_WITH(hf::adapter_for_model_type("gemma2"),
                      Catch::Contains("\"gemma2\" is not supported") && Catch::Contains("soft-capping") &&
                          Catch::Contains("sliding-window") && Catch::Contains("norms"));
}
