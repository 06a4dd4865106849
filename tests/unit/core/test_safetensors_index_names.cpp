// model.safetensors.index.json naming a file the file system cannot even look up (found by tests/fuzz):
// refused with gptrain::Error naming the index, not std::filesystem::filesystem_error.
#include "core/safetensors/sharded.h"
#include "error_text.h"
#include "scratch_dir.h"

#include <catch2/catch.hpp>

#include <fstream>

TEST_CASE("safetensors index: a shard name longer than the file system allows is refused naming the index") {
  const gptrain::test::ScratchDir scratch("st_index_names");
  const auto dir = scratch.fresh("long_name");
  const std::string name = "model-" + std::string(300, 'x') + ".safetensors";  // NAME_MAX is 255
  std::ofstream(dir / "model.safetensors.index.json") << R"({"weight_map": {"a": ")" << name << R"("}})";
  const std::string e = gptrain::test::error_text([&] { gptrain::safetensors::WeightSet ws(dir.string()); });
  REQUIRE(e.find((dir / "model.safetensors.index.json").string()) != std::string::npos);
  REQUIRE(e.find("does not exist") != std::string::npos);
  scratch.remove();
}
