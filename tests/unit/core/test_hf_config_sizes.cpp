// convert_from_hf on a config.json whose sizes the model refuses (found by tests/fuzz): the error names
// config.json, not only pretrain_gpt's flag ("--hidden-size must be > 0"), which the user never gave.
#include "core/hf/adapter.h"
#include "core/hf/convert.h"
#include "core/safetensors/writer.h"
#include "error_text.h"
#include "scratch_dir.h"

#include <catch2/catch.hpp>

#include <fstream>

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
                      Catch::Contains("cfg/config.json: \"n_layer\" is -2147483649, out of range"));
}

TEST_CASE("hf: more layers in config.json than the weight set has tensors is refused before converting") {
  // n_layer 65536 beside a one-layer weight set took 16 s to list and declare tensors before failing.
  const gptrain::test::ScratchDir scratch("hf_config_layers");
  const auto dir = scratch.fresh("hf");
  std::ofstream(dir / "config.json") << R"({"model_type": "gpt2", "n_layer": 65536, "n_embd": 8, "n_head": 2,
                                           "vocab_size": 16, "n_positions": 8})";
  const std::vector<float> v(8, 1.0f);
  const std::vector<gptrain::safetensors::HostTensorRef> refs = {
      {{"wte.weight", gptrain::safetensors::DType::F32, {1, 8}}, v.data()}};
  gptrain::safetensors::write_file((dir / "model.safetensors").string(), refs);
  gptrain::hf::FromHfOptions o;
  o.hf_dir = dir.string();
  o.save_dir = (scratch.root() / "out").string();
  const std::string e = gptrain::test::error_text([&] { gptrain::hf::convert_from_hf(o); });
  REQUIRE(e.find((dir / "config.json").string() + ": 65536 layers, but") != std::string::npos);
  scratch.remove();
}
