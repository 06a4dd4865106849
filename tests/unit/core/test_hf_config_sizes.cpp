// convert_from_hf on a config.json whose sizes the model refuses (found by tests/fuzz): the error names
// config.json, not only pretrain_gpt's flag ("--hidden-size must be > 0"), which the user never gave.
#include "core/hf/convert.h"
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
