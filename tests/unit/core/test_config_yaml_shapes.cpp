// --config YAML whose keys or list items are not scalars: refused with gptrain::Error naming the file
// and line, never yaml-cpp's conversion exceptions.
#include "core/config/train_args.h"
#include "error_text.h"
#include "scratch_dir.h"

#include <catch2/catch.hpp>

#include <fstream>

namespace {
std::string refusal(const std::string& yaml) {
  const gptrain::test::ScratchDir scratch("config_yaml_shapes");
  const auto dir = scratch.fresh("y");
  std::ofstream(dir / "run.yaml") << yaml;
  const std::string path = (dir / "run.yaml").string();
  const char* argv[] = {"pretrain_gpt", "--config", path.c_str()};
  std::string e = gptrain::test::error_text([&] { gptrain::parse_train_args(3, argv, 1); });
  INFO(yaml << " -> " << e);
  CHECK(e.find(path) != std::string::npos);
  scratch.remove();
  return e;
}
}  // namespace

TEST_CASE("config: YAML keys and list items that are not scalars are refused naming the file") {
  refusal("[num_layers, hidden_size]: 2\n");
  refusal("? {num_layers: 2}\n: 3\n");
  refusal("data_path: [[1, a], b]\n");
  refusal("data_path: [{a: 1}]\n");
  refusal("num_layers: {a: 1}\n");
  refusal("- num_layers\n");
  refusal("num_layers: &x 2\nhidden_size: *y\n");
}
