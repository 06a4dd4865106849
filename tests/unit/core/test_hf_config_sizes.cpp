// convert_from_hf on a config.json whose sizes the model refuses (found by tests/fuzz): the error names
// config.json, not only pretrain_gpt's flag ("--hidden-size must be > 0"), which the user never gave.
#include "core/hf/adapter.h"
#include "core/hf/convert.h"
#include "core/safetensors/writer.h"
#include "error_text.h"
#include "scratch_dir.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <fstream>
#include <vector>

TEST_CASE("hf: a config.json with sizes the model refuses is named in the error") {
  const gptrain::test::ScratchDir scratch("hf_config_sizes");
  const auto dir = scratch.fresh("hf");
  std::ofstream(dir / "config.json") << R"({"model_type": "gpt2", "n_layer": 1, "n_embd": 8, "n_head": 2,
                                           "vocab_size": 0, "n_positions": 8})";
  gptrain::hf::FromHfOptions o;
  o.hf_dir = dir.string();
  o.save_dir = (scratch.root() / "out").string();
  const std::string e = gptrain::test::error_text([&] { gptrain::hf::convert_from_hf(o); });
  REQUIRE(e.find((dir / "config.json").string()) != std::string::npos);
  REQUIRE(e.find("vocabulary size must be > 0") != std::string::npos);
  scratch.remove();
}

TEST_CASE("hf: a config.json integer beyond int is refused, not wrapped around") {
  // -2147483649 read with json's get<int> became 2147483647 layers: a 700 MB list of tensors to convert.
  const nlohmann::json j = {{"model_type", "gpt2"}, {"n_layer", -2147483649ll}, {"n_embd", 8},
                            {"n_head", 2},          {"vocab_size", 16},         {"n_positions", 8}};
  REQUIRE_THROWS_WITH(gptrain::hf::adapter_for_model_type("gpt2").from_hf_config(j, "cfg/config.json"),
                      Catch::Contains("cfg/config.json: \"n_layer\" is -2147483649, expected 0 to 4096"));
}

TEST_CASE("hf: more layers in config.json than the weight set has tensors is refused before converting") {
  // n_layer 65536 beside a one-layer weight set took 16 s to list and declare tensors before failing; the
  // largest count config.json may give (4096) is checked against the weights before anything is listed.
  const gptrain::test::ScratchDir scratch("hf_config_layers");
  const auto dir = scratch.fresh("hf");
  std::ofstream(dir / "config.json") << R"({"model_type": "gpt2", "n_layer": 4096, "n_embd": 8, "n_head": 2,
                                           "vocab_size": 16, "n_positions": 8})";
  const std::vector<float> v(8, 1.0f);
  const std::vector<gptrain::safetensors::HostTensorRef> refs = {
      {{"wte.weight", gptrain::safetensors::DType::F32, {1, 8}}, v.data()}};
  gptrain::safetensors::write_file((dir / "model.safetensors").string(), refs);
  gptrain::hf::FromHfOptions o;
  o.hf_dir = dir.string();
  o.save_dir = (scratch.root() / "out").string();
  const std::string e = gptrain::test::error_text([&] { gptrain::hf::convert_from_hf(o); });
  REQUIRE(e.find((dir / "config.json").string() + ": 4096 layers, but") != std::string::npos);
  scratch.remove();
}

TEST_CASE("hf: every size in config.json is bounded before anything is sized by it") {
  // Mixtral's 2147483647 layers sized an 8 GiB per-layer list before the weights were looked at (the fuzz
  // pass's seed 4242); a negative count made std::length_error.
  const nlohmann::json gpt2 = {{"model_type", "gpt2"}, {"n_layer", 1},     {"n_embd", 8},
                               {"n_head", 2},          {"vocab_size", 16}, {"n_positions", 8}};
  nlohmann::json gptj = gpt2;
  gptj["model_type"] = "gptj", gptj["rotary_dim"] = 2;
  const nlohmann::json neox = {{"model_type", "gpt_neox"},    {"num_hidden_layers", 1},  {"hidden_size", 8},
                               {"num_attention_heads", 2},    {"intermediate_size", 16}, {"vocab_size", 16},
                               {"max_position_embeddings", 8}};
  nlohmann::json llama = neox;
  llama["model_type"] = "llama", llama["num_key_value_heads"] = 1, llama["head_dim"] = 4;
  nlohmann::json mixtral = llama;
  mixtral["model_type"] = "mixtral", mixtral["num_local_experts"] = 2, mixtral["num_experts_per_tok"] = 1;
  const std::vector<std::pair<nlohmann::json, std::vector<const char*>>> cases = {
      {gpt2, {"n_layer", "n_embd", "n_head", "n_inner", "vocab_size", "n_positions"}},
      {gptj, {"n_layer", "n_embd", "n_head", "n_inner", "vocab_size", "n_positions", "rotary_dim"}},
      {neox,
       {"num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size",
        "max_position_embeddings"}},
      {llama,
       {"num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
        "intermediate_size", "vocab_size", "max_position_embeddings"}},
      {mixtral,
       {"num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim",
        "intermediate_size", "vocab_size", "max_position_embeddings", "num_local_experts", "num_experts_per_tok"}},
  };
  for (const auto& [config, keys] : cases) {
    const auto& adapter = gptrain::hf::adapter_for_model_type(config["model_type"].get<std::string>());
    for (const char* key : keys)
      for (const int64_t bad : {int64_t(2147483647), int64_t(-1)}) {
        nlohmann::json j = config;
        j[key] = bad;
        INFO(config["model_type"].get<std::string>() << " " << key << " " << bad);
        REQUIRE_THROWS_WITH(adapter.from_hf_config(j, "cfg/config.json"),
                            Catch::Contains(fmt::format("cfg/config.json: \"{}\" is {}, expected 0 to", key, bad)));
      }
  }
}
