// metadata.json's counts must be JSON integers that fit their field (found by tests/fuzz): a damaged
// file with "iteration": 1.5, 2^63 or -3 used to load as iteration 1, -2^63 or -3.
#include "core/checkpoint/checkpoint.h"
#include "error_text.h"

#include <catch2/catch.hpp>

namespace ck = gptrain::checkpoint;
using nlohmann::json;

namespace {
std::string refusal(const json& j) {
  return gptrain::test::error_text([&] { ck::metadata_from_json(j, "x/metadata.json"); });
}
json with(const char* key, json value) {
  json j = ck::metadata_to_json(ck::Metadata{});
  j[key] = std::move(value);
  return j;
}
}  // namespace

TEST_CASE("checkpoint metadata: a fraction, a too large or a negative count is refused naming the file and key") {
  REQUIRE(refusal(ck::metadata_to_json(ck::Metadata{})).empty());
  for (const json& bad : {json(1.5), json(uint64_t{1} << 63), json(-3), json(true)}) {
    const std::string e = refusal(with("iteration", bad));
    INFO(bad.dump() << ": " << e);
    REQUIRE(e.find("x/metadata.json") != std::string::npos);
    REQUIRE(e.find("iteration") != std::string::npos);
  }
  REQUIRE(refusal(with("consumed_train_samples", -1)).find("consumed_train_samples") != std::string::npos);
  json layout = ck::metadata_to_json(ck::Metadata{});
  layout["layout"]["tp"] = 4294967298ll;  // read as int, it was 2
  REQUIRE(refusal(layout).find("\"tp\"") != std::string::npos);
}
