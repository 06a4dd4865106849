// core/hf helpers and the checkpoint "model" JSON: permutations against their index definitions.
#include "core/checkpoint/model_json.h"
#include "core/common/error.h"
#include "core/hf/adapter.h"
#include "core/hf/family.h"
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

namespace {
nlohmann::json qwen2_config() {
  return {{"model_type", "qwen2"},    {"num_hidden_layers", 2},        {"hidden_size", 64},
          {"num_attention_heads", 4}, {"num_key_value_heads", 2},      {"intermediate_size", 96},
          {"vocab_size", 1000},       {"max_position_embeddings", 64}, {"rms_norm_eps", 1e-6},
          {"rope_theta", 1000000.0},  {"tie_word_embeddings", true},   {"use_sliding_window", false},
          {"sliding_window", 4096},   {"max_window_layers", 28},       {"hidden_act", "silu"}};
}
}  // namespace

TEST_CASE("hf: qwen2 is Llama with a QKV-only bias, use_sliding_window true is refused by name") {
  const hf::Adapter& q = hf::adapter_for_model_type("qwen2");
  auto m = q.from_hf_config(qwen2_config(), "q/config.json");
  REQUIRE(m.family == "qwen2");
  REQUIRE(m.config.add_qkv_bias);
  REQUIRE_FALSE(m.config.add_bias_linear);
  REQUIRE(m.config.qkv_bias());
  REQUIRE_FALSE(m.config.proj_bias());
  REQUIRE(m.config.tied_head());
  REQUIRE(m.config.rotary_base == 1000000.0f);
  m.config.finalize(128);
  const auto out = q.hf_config(m);
  REQUIRE(out["model_type"] == "qwen2");
  REQUIRE(out["use_sliding_window"] == false);
  REQUIRE_FALSE(out.contains("head_dim"));

  auto sw = qwen2_config();
  sw["use_sliding_window"] = true;
  REQUIRE_THROWS_WITH(q.from_hf_config(sw, "q/config.json"),
                      Catch::Contains("q/config.json") && Catch::Contains("use_sliding_window true is not supported") &&
                          Catch::Contains("max_window_layers"));
  auto hd = qwen2_config();
  hd["head_dim"] = 32;
  REQUIRE_THROWS_WITH(q.from_hf_config(hd, "q/config.json"), Catch::Contains("\"head_dim\" 32"));
  auto rs = qwen2_config();
  rs["rope_scaling"] = {{"type", "yarn"}, {"factor", 4.0}};
  REQUIRE_THROWS_WITH(q.from_hf_config(rs, "q/config.json"), Catch::Contains("rope_scaling"));

  // Llama-3 RoPE scaling is the llama family's alone: the others' exports refuse it instead of writing plain RoPE.
  auto scaled = m;
  scaled.config.rope_scaling.llama3 = true;
  REQUIRE_THROWS_WITH(q.hf_config(scaled), Catch::Contains("--use-rope-scaling"));
  scaled.config.add_qkv_bias = false;
  scaled.config.qk_layernorm = true;
  REQUIRE_THROWS_WITH(hf::adapter_for_family("qwen3").hf_config(scaled), Catch::Contains("--use-rope-scaling"));
  scaled.config.qk_layernorm = false;
  scaled.config.window_size = 5;
  REQUIRE_THROWS_WITH(hf::adapter_for_family("mistral").hf_config(scaled), Catch::Contains("--use-rope-scaling"));
  scaled.config.window_size = -1;
  scaled.config.geglu = true;
  scaled.config.swiglu = false;
  scaled.config.scale_embeddings_by_sqrt_hidden = true;
  REQUIRE_THROWS_WITH(hf::adapter_for_family("gemma").hf_config(scaled), Catch::Contains("--use-rope-scaling"));

  // Llama keeps refusing the QKV-only bias (it has no such layout); Qwen2 refuses anything else.
  REQUIRE_THROWS_WITH(hf::adapter_for_family("llama").hf_config(m), Catch::Contains("qkv-only bias"));
  auto all_bias = m;
  all_bias.config.add_bias_linear = true;
  REQUIRE_THROWS_WITH(q.hf_config(all_bias),
                      Catch::Contains("Qwen2ForCausalLM cannot express") && Catch::Contains("no other bias"));
}

TEST_CASE("hf: qwen2_moe reads its sparse layers, routing and gated shared expert from config.json") {
  const hf::Adapter& q = hf::adapter_for_model_type("qwen2_moe");
  auto j = qwen2_config();
  j["model_type"] = "qwen2_moe";
  j["num_hidden_layers"] = 4;
  j.update({{"num_experts", 4},
            {"num_experts_per_tok", 2},
            {"moe_intermediate_size", 32},
            {"shared_expert_intermediate_size", 48},
            {"norm_topk_prob", false},
            {"decoder_sparse_step", 2},
            {"mlp_only_layers", {3}},
            {"router_aux_loss_coef", 0.001},
            {"output_router_logits", false}});
  auto m = q.from_hf_config(j, "m/config.json");
  const auto& moe = m.config.moe;
  REQUIRE(m.family == "qwen2_moe");
  REQUIRE(moe.layer_pattern == std::vector<int>{0, 1, 0, 0});  // (i + 1) % 2 == 0, minus layer 3
  REQUIRE(moe.pre_softmax);                                    // norm_topk_prob false
  REQUIRE(moe.shared_expert_gate);
  REQUIRE(moe.shared_expert_intermediate_size == 48);
  REQUIRE(moe.ffn_hidden_size == 32);
  REQUIRE(m.config.ffn_hidden_size == 96);
  REQUIRE(moe.aux_loss_coeff == Approx(0.002));  // x K, as Mixtral's
  j["norm_topk_prob"] = true;
  REQUIRE_FALSE(q.from_hf_config(j, "m/config.json").config.moe.pre_softmax);

  m.config.finalize(128);
  const auto out = q.hf_config(m);
  REQUIRE(out["mlp_only_layers"] == nlohmann::json({0, 2, 3}));
  REQUIRE(out["decoder_sparse_step"] == 1);
  REQUIRE(out["norm_topk_prob"] == false);

  auto bad = j;
  bad["mlp_only_layers"] = {7};
  REQUIRE_THROWS_WITH(q.from_hf_config(bad, "m/config.json"), Catch::Contains("\"mlp_only_layers\" holds 7"));
  bad = j;
  bad["mlp_only_layers"] = {1, 3};
  REQUIRE_THROWS_WITH(q.from_hf_config(bad, "m/config.json"), Catch::Contains("leave no sparse layer"));
  bad = j;
  bad["use_sliding_window"] = true;
  REQUIRE_THROWS_WITH(q.from_hf_config(bad, "m/config.json"), Catch::Contains("use_sliding_window true"));
  auto ungated = m;
  ungated.config.moe.shared_expert_gate = false;
  REQUIRE_THROWS_WITH(q.hf_config(ungated), Catch::Contains("--moe-shared-expert-gate"));
  // --load of a gated checkpoint by an ungated run names the switch.
  REQUIRE(gptrain::checkpoint::model_differences(gptrain::checkpoint::model_to_json(m), ungated.config) ==
          "moe.shared_expert_gate (checkpoint true, this run false)");
}

TEST_CASE("hf: mistral's sliding_window W is --window-size W-1,0 and unsupported fields are refused by name") {
  const hf::Adapter& mistral = hf::adapter_for_model_type("mistral");
  REQUIRE(std::string(mistral.family()) == "mistral");
  const nlohmann::json good = {{"model_type", "mistral"},  {"num_hidden_layers", 2},   {"hidden_size", 64},
                               {"num_attention_heads", 4}, {"num_key_value_heads", 2}, {"head_dim", 24},
                               {"intermediate_size", 96},  {"vocab_size", 100},        {"max_position_embeddings", 32},
                               {"sliding_window", 5}};
  auto m = mistral.from_hf_config(good, "cfg/config.json");
  REQUIRE(m.family == "mistral");
  REQUIRE(m.config.window_size == 4);  // keys t-4 .. t: 5 keys, the query's own included
  REQUIRE(m.config.kv_channels == 24);
  REQUIRE_FALSE(m.config.add_bias_linear);
  nlohmann::json j = good;
  j["sliding_window"] = nullptr;
  REQUIRE(mistral.from_hf_config(j, "cfg/config.json").config.window_size == -1);
  j.erase("sliding_window");  // MistralConfig's default, 4096
  REQUIRE(mistral.from_hf_config(j, "cfg/config.json").config.window_size == 4095);
  // Export writes the window back as HF's count of keys.
  m.config.finalize(128);
  REQUIRE(mistral.hf_config(m)["sliding_window"] == 5);
  REQUIRE(mistral.hf_config(m)["model_type"] == "mistral");
  // Llama's layout has no window: its export refuses a windowed model rather than dropping the window.
  REQUIRE_THROWS_WITH(hf::adapter_for_family("llama").hf_config(m), Catch::Contains("no sliding-window attention"));
  m.config.window_attn_skip_freq = 2;
  REQUIRE_THROWS_WITH(mistral.hf_config(m), Catch::Contains("MistralForCausalLM cannot express") &&
                                                Catch::Contains("--window-attn-skip-freq"));
  const std::vector<std::pair<const char*, nlohmann::json>> refused = {
      {"sliding_window", 0},
      {"rope_scaling", {{"rope_type", "linear"}, {"factor", 2.0}}},
      {"attention_bias", true},
      {"use_sliding_window", true},
      {"max_window_layers", 1}};
  for (const auto& [key, value] : refused) {
    nlohmann::json bad = good;
    bad[key] = value;
    INFO(key << " = " << value.dump());
    REQUIRE_THROWS_WITH(mistral.from_hf_config(bad, "cfg/config.json"),
                        Catch::Contains("cfg/config.json") && Catch::Contains(key));
  }
}

TEST_CASE(
    "hf: qwen3 / qwen3_moe config.json: per-head Q/K norms, head_dim, the MoE pattern, unsupported keys refused") {
  const hf::Adapter& qwen3 = hf::adapter_for_model_type("qwen3");
  const hf::Adapter& qwen3_moe = hf::adapter_for_model_type("qwen3_moe");
  const nlohmann::json good = {
      {"model_type", "qwen3"},         {"num_hidden_layers", 4},   {"hidden_size", 64},
      {"num_attention_heads", 4},      {"num_key_value_heads", 2}, {"head_dim", 32},
      {"intermediate_size", 96},       {"vocab_size", 1000},       {"rms_norm_eps", 1e-6},
      {"max_position_embeddings", 64}, {"rope_theta", 1e6},        {"tie_word_embeddings", true},
      {"use_sliding_window", false},   {"attention_bias", false}};
  const auto m = qwen3.from_hf_config(good, "q/config.json");
  REQUIRE(m.family == "qwen3");
  REQUIRE(m.config.qk_layernorm);
  REQUIRE(m.config.kv_channels == 32);  // head_dim, not hidden / heads
  REQUIRE_FALSE(m.config.add_bias_linear);
  REQUIRE(m.config.tied_head());
  REQUIRE(hf::default_family(m.config) == "qwen3");
  const std::vector<std::pair<const char*, nlohmann::json>> refused = {
      {"use_sliding_window", true},
      {"attention_bias", true},
      {"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}},
      {"layer_types", {"full_attention", "sliding_attention", "full_attention", "full_attention"}},
      {"hidden_act", "gelu"}};
  for (const auto& [key, value] : refused) {
    nlohmann::json j = good;
    j[key] = value;
    INFO(key << " = " << value.dump());
    REQUIRE_THROWS_WITH(qwen3.from_hf_config(j, "q/config.json"),
                        Catch::Contains("q/config.json") && Catch::Contains(key));
  }
  // Qwen3-MoE: layer i is sparse unless listed in mlp_only_layers or (i + 1) % decoder_sparse_step != 0;
  // norm_topk_prob false is --moe-router-pre-softmax.
  nlohmann::json moe = good;
  moe["model_type"] = "qwen3_moe";
  moe.update({{"num_experts", 8},
              {"num_experts_per_tok", 2},
              {"moe_intermediate_size", 48},
              {"decoder_sparse_step", 2},
              {"mlp_only_layers", {3}},
              {"norm_topk_prob", false},
              {"router_aux_loss_coef", 0.001}});
  const auto mm = qwen3_moe.from_hf_config(moe, "m/config.json");
  REQUIRE(mm.family == "qwen3_moe");
  REQUIRE(mm.config.qk_layernorm);
  REQUIRE(mm.config.moe.layer_pattern == std::vector<int>{0, 1, 0, 0});
  REQUIRE(mm.config.moe.ffn_hidden_size == 48);
  REQUIRE(mm.config.moe.pre_softmax);
  moe["norm_topk_prob"] = true;
  REQUIRE_FALSE(qwen3_moe.from_hf_config(moe, "m/config.json").config.moe.pre_softmax);
  // The Llama export would drop the per-head norms: it refuses a --qk-layernorm model by name.
  gptrain::checkpoint::ModelDescription d = m;
  d.config.padded_vocab_size = 1024;
  REQUIRE_THROWS_WITH(hf::adapter_for_family("llama").hf_config(d), Catch::Contains("--qk-layernorm"));
  REQUIRE(qwen3.hf_config(d)["model_type"] == "qwen3");
}

TEST_CASE("hf: Gemma's config.json, its defaults and the fields gptrain refuses by name, and gemma2 is refused") {
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
