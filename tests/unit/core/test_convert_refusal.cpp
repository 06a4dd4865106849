// convert_from_hf never replaces a training checkpoint in --save (a new iteration beside it is allowed).
#include "core/checkpoint/checkpoint.h"
#include "core/hf/convert.h"

#include "error_text.h"
#include "scratch_dir.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

namespace ck = gptrain::checkpoint;
namespace fs = std::filesystem;

namespace {
const gptrain::test::ScratchDir kRefusalScratch("convref");

// A training checkpoint at iteration 10 (tracker "10", iter_0000010/ with a metadata.json and an optimizer file).
fs::path training_checkpoint(const std::string& name) {
  const auto dir = kRefusalScratch.fresh(name);
  fs::create_directories(dir / "iter_0000010");
  std::ofstream(dir / "iter_0000010" / "metadata.json") << "{}";
  std::ofstream(dir / "iter_0000010" / "optim_tp00_pp000_dp000.safetensors") << "x";
  std::ofstream(dir / "latest_checkpointed_iteration.txt") << "10";
  return dir;
}

// The HF directory does not exist: a conversion that gets past the refusal stops at its config.json.
std::string from_hf_error(const fs::path& save, std::optional<int64_t> iteration) {
  gptrain::hf::FromHfOptions o;
  o.hf_dir = (kRefusalScratch.root() / "no_hf_model").string();
  o.save_dir = save.string();
  if (iteration) o.step = ck::Step::at(*iteration);
  return gptrain::test::error_text([&] { gptrain::hf::convert_from_hf(o); });
}
}  // namespace

TEST_CASE("convert_from_hf refuses a --save directory holding a training checkpoint", "[checkpoint]") {
  const auto dir = training_checkpoint("ckpt");
  const std::string release = from_hf_error(dir, std::nullopt);
  CHECK(release.find("--save " + dir.string() +
                     ": holds a training checkpoint (the tracker "
                     "latest_checkpointed_iteration.txt (naming 10), iter_0000010)") != std::string::npos);
  CHECK(release.find("refusing to replace it") != std::string::npos);
  const std::string same = from_hf_error(dir, 10);
  CHECK(same.find("iter_0000010 exists") != std::string::npos);
  // Nothing was touched.
  std::ifstream t(dir / "latest_checkpointed_iteration.txt");
  CHECK(std::string(std::istreambuf_iterator<char>(t), {}) == "10");
  CHECK(fs::exists(dir / "iter_0000010" / "optim_tp00_pp000_dp000.safetensors"));
  // A new iteration beside it gets past the refusal (and stops at the missing HF config here).
  CHECK(from_hf_error(dir, 20).find("no config.json") != std::string::npos);
  // So does an empty or new directory.
  CHECK(from_hf_error(kRefusalScratch.fresh("empty"), std::nullopt).find("no config.json") != std::string::npos);
}

TEST_CASE("a tracker alone, or a release directory alone, is a training checkpoint", "[checkpoint]") {
  const auto tracker = kRefusalScratch.fresh("tracker_only");
  std::ofstream(tracker / "latest_checkpointed_iteration.txt") << "release";
  CHECK(from_hf_error(tracker, std::nullopt).find("refusing to replace it") != std::string::npos);
  const auto rel = kRefusalScratch.fresh("release_only");
  fs::create_directories(rel / "release");
  CHECK(from_hf_error(rel, std::nullopt).find("holds a training checkpoint (release)") != std::string::npos);
  kRefusalScratch.remove();
}
