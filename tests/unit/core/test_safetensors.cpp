// safetensors reader/writer: round trips, 16-bit conversions, strict header validation, sharding.
#include "core/common/error.h"
#include "core/safetensors/reader.h"
#include "core/safetensors/sharded.h"
#include "core/safetensors/writer.h"

#include "scratch_dir.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace st = gptrain::safetensors;
namespace fs = std::filesystem;

namespace {

const gptrain::test::ScratchDir kSafetensorsScratch("st");
void cleanup() { kSafetensorsScratch.remove(); }  // at the end of a passing test
fs::path scratch(const std::string& name) { return kSafetensorsScratch.fresh(name); }

// A file made of an 8-byte length, the given header text and `data_bytes` zero bytes.
std::string raw_file(const fs::path& dir, const std::string& header, std::size_t data_bytes,
                     int64_t len_override = -1) {
  const std::string path = (dir / "raw.safetensors").string();
  std::ofstream f(path, std::ios::binary);
  const uint64_t n = len_override >= 0 ? static_cast<uint64_t>(len_override) : header.size();
  f.write(reinterpret_cast<const char*>(&n), 8);
  f << header;
  f << std::string(data_bytes, '\0');
  return path;
}

std::string error_of(const std::string& path) {
  try {
    st::Reader r(path);
  } catch (const gptrain::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("safetensors: fp32/bf16/fp16 round trip keeps values, alignment and metadata") {
  const auto dir = scratch("roundtrip");
  const std::string path = (dir / "t.safetensors").string();
  std::vector<float> a = {1.0f, -2.5f, 3.25f, 0.0f, 1e-3f, 65504.0f};
  std::vector<float> b = {0.5f, 1.5f, -0.75f, 2.0f};
  std::vector<float> c = {7.0f};
  {
    st::Writer w(path,
                 {{"b16", st::DType::BF16, {2, 2}}, {"f16", st::DType::F16, {1}}, {"w.weight", st::DType::F32, {2, 3}}},
                 {{"extra", "value"}});
    w.write_f32("f16", c.data(), 1);  // any order
    w.write_f32("w.weight", a.data(), a.size());
    w.write_f32("b16", b.data(), b.size());
    w.finish();
  }
  REQUIRE(fs::exists(path));
  for (const auto& e : fs::directory_iterator(dir))
    REQUIRE(e.path().filename().string().find(".tmp.") == std::string::npos);
  st::Reader r(path);
  REQUIRE(r.metadata().at("format") == "pt");
  REQUIRE(r.metadata().at("extra") == "value");
  REQUIRE(r.tensors().size() == 3);
  // F32 (4-byte alignment) comes first, then the 2-byte types by name.
  REQUIRE(r.tensors()[0].name == "w.weight");
  REQUIRE(r.tensors()[1].name == "b16");
  REQUIRE(r.info("w.weight").shape == std::vector<int64_t>{2, 3});
  REQUIRE(r.read_f32("w.weight") == a);
  REQUIRE(r.read_f32("b16") == b);  // exactly representable in bf16
  REQUIRE(r.read_f32("f16") == c);
  // data section starts 8-aligned
  uint64_t n = 0;
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(&n), 8);
  REQUIRE(n % 8 == 0);
  REQUIRE(fs::file_size(path) == 8 + n + 6 * 4 + 4 * 2 + 2);
  REQUIRE_THROWS_WITH(r.info("nope"), Catch::Contains("t.safetensors") && Catch::Contains("nope"));
  cleanup();
}

TEST_CASE("safetensors: 16-bit conversions round to nearest even like torch") {
  REQUIRE(st::f32_to_bf16(1.0f) == 0x3f80);
  REQUIRE(st::f32_to_bf16(-2.0f) == 0xc000);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even (1.0)
  REQUIRE(st::f32_to_bf16(1.00390625f) == 0x3f80);
  REQUIRE(st::f32_to_bf16(1.01171875f) == 0x3f82);  // 1 + 3*2^-8: tie to even upwards
  REQUIRE(std::isnan(st::bf16_to_f32(st::f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  REQUIRE(st::f32_to_f16(1.0f) == 0x3c00);
  REQUIRE(st::f32_to_f16(65504.0f) == 0x7bff);
  REQUIRE(st::f32_to_f16(65519.0f) == 0x7bff);
  REQUIRE(st::f32_to_f16(65520.0f) == 0x7c00);                      // overflows to inf
  REQUIRE(st::f32_to_f16(std::ldexp(1.0f, -24)) == 0x0001);         // smallest subnormal
  REQUIRE(st::f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);         // tie to even: 0
  REQUIRE(st::f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);         // 1.5 units: tie to even: 2
  REQUIRE(st::f32_to_f16(std::ldexp(1.0f, -14)) == 0x0400);         // smallest normal
  REQUIRE(st::f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);  // tie to even
  REQUIRE(st::f32_to_f16(-0.0f) == 0x8000);
  // every finite half survives f16 -> f32 -> f16
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00) continue;
    REQUIRE(st::f32_to_f16(st::f16_to_f32(static_cast<uint16_t>(h))) == h);
  }
  cleanup();
}

TEST_CASE("safetensors: malformed files are rejected with a message naming the file") {
  const auto dir = scratch("malformed");
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  REQUIRE(error_of(raw_file(dir, ok, 8)).empty());
  REQUIRE_THAT(error_of(raw_file(dir, ok, 8, 1ll << 40)),
               Catch::Contains("raw.safetensors") && Catch::Contains("header length"));
  REQUIRE_THAT(error_of(raw_file(dir, ok, 8, 5000)), Catch::Contains("runs past the end"));
  REQUIRE_THAT(error_of(raw_file(dir, "{\"a\": ", 0)), Catch::Contains("not valid JSON"));
  REQUIRE_THAT(error_of(raw_file(dir, "[1, 2]", 0)), Catch::Contains("starting with"));
  REQUIRE_THAT(error_of(raw_file(dir, ok, 12)), Catch::Contains("data section is 12 bytes"));
  REQUIRE_THAT(error_of(raw_file(dir, ok, 4)), Catch::Contains("data section is 4 bytes"));
  REQUIRE_THAT(error_of(raw_file(dir, R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)),
               Catch::Contains("need 12"));
  REQUIRE_THAT(error_of(raw_file(dir, R"({"a":{"dtype":"Q7","shape":[2],"data_offsets":[0,8]}})", 8)),
               Catch::Contains("unknown dtype"));
  REQUIRE_THAT(error_of(raw_file(dir,
                                 R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                 12)),
               Catch::Contains("overlaps"));
  REQUIRE_THAT(error_of(raw_file(dir, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12)),
               Catch::Contains("hole"));
  REQUIRE_THAT(error_of(raw_file(dir, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)),
               Catch::Contains("end before begin"));
  REQUIRE_THAT(error_of(raw_file(dir, R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)),
               Catch::Contains("negative"));
  REQUIRE_THAT(error_of(raw_file(dir,
                                 R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("a":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                                 16)),
               Catch::Contains("duplicate"));
  REQUIRE_THAT(error_of(raw_file(dir, R"({"__metadata__":{"format":1}})", 0)), Catch::Contains("must be a string"));
  REQUIRE_THAT(error_of(raw_file(dir, R"({"a":{"dtype":"F32","shape":[2]}})", 8)), Catch::Contains("data_offsets"));
  {
    const std::string tiny = (dir / "tiny.safetensors").string();
    std::ofstream(tiny) << "abc";
    REQUIRE_THAT(error_of(tiny), Catch::Contains("tiny.safetensors") && Catch::Contains("at least 8"));
  }
  REQUIRE_THAT(error_of((dir / "absent.safetensors").string()), Catch::Contains("absent.safetensors"));
  // Whitespace padding after the JSON, empty tensors and scalars are valid.
  REQUIRE(error_of(raw_file(dir,
                            R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},)"
                            R"("e":{"dtype":"BF16","shape":[0,3],"data_offsets":[4,4]}}    )",
                            4))
              .empty());
  cleanup();
}

TEST_CASE("safetensors: writer rejects wrong sizes, undeclared and missing tensors, and leaves no file") {
  const auto dir = scratch("writer_errors");
  const std::string path = (dir / "w.safetensors").string();
  std::vector<float> v(6, 1.0f);
  {
    st::Writer w(path, {{"a", st::DType::F32, {2, 3}}, {"b", st::DType::BF16, {4}}});
    REQUIRE_THROWS_WITH(w.write_f32("a", v.data(), 5), Catch::Contains("shape (2, 3)") && Catch::Contains("5 values"));
    REQUIRE_THROWS_WITH(w.write_f32("zzz", v.data(), 1), Catch::Contains("not declared"));
    w.write_f32("a", v.data(), 6);
    REQUIRE_THROWS_WITH(w.write_f32("a", v.data(), 6), Catch::Contains("twice"));
    REQUIRE_THROWS_WITH(w.finish(), Catch::Contains("\"b\"") && Catch::Contains("never written"));
  }
  REQUIRE(!fs::exists(path));
  REQUIRE(fs::is_empty(dir));
  cleanup();
}

TEST_CASE("safetensors: parse_size accepts decimal and binary suffixes") {
  REQUIRE(st::parse_size("5GB", "--max-shard-size") == 5'000'000'000ull);
  REQUIRE(st::parse_size("500MB", "x") == 500'000'000ull);
  REQUIRE(st::parse_size("2GiB", "x") == 2ull << 30);
  REQUIRE(st::parse_size("10kb", "x") == 10'000ull);
  REQUIRE(st::parse_size("1234", "x") == 1234ull);
  REQUIRE_THROWS_WITH(st::parse_size("5XB", "--max-shard-size"),
                      Catch::Contains("--max-shard-size") && Catch::Contains("unit"));
  REQUIRE_THROWS_WITH(st::parse_size("GB", "--max-shard-size"), Catch::Contains("expected a size"));
  REQUIRE_THROWS(st::parse_size("0MB", "x"));
  cleanup();
}

TEST_CASE("safetensors: sharded weight sets split above the max size and read back through the index") {
  const auto dir = scratch("sharded");
  std::vector<std::vector<float>> data;
  std::vector<st::TensorSpec> specs;
  for (int i = 0; i < 5; ++i) {
    specs.push_back({fmt::format("t{}", i), st::DType::F32, {10}});
    data.emplace_back(10);
    for (int j = 0; j < 10; ++j) data.back()[j] = static_cast<float>(i * 100 + j);
  }
  st::ShardedWriter w(dir.string(), specs, 100);  // 40-byte tensors: two per shard
  REQUIRE(w.num_shards() == 3);
  for (int i = 4; i >= 0; --i) w.write_f32(fmt::format("t{}", i), data[i].data(), 10);
  w.finish();
  REQUIRE(fs::exists(dir / "model-00001-of-00003.safetensors"));
  REQUIRE(fs::exists(dir / "model-00003-of-00003.safetensors"));
  REQUIRE(fs::exists(dir / "model.safetensors.index.json"));
  st::WeightSet ws(dir.string());
  REQUIRE(ws.names().size() == 5);
  REQUIRE(ws.total_bytes() == 200);
  for (int i = 0; i < 5; ++i) REQUIRE(ws.read_f32(fmt::format("t{}", i)) == data[i]);
  REQUIRE_THROWS_WITH(ws.read_f32("t9"), Catch::Contains("t9"));

  // One shard: model.safetensors and no index.
  const auto one = scratch("single");
  st::ShardedWriter w1(one.string(), specs, 5'000'000'000ull);
  for (int i = 0; i < 5; ++i) w1.write_f32(fmt::format("t{}", i), data[i].data(), 10);
  w1.finish();
  REQUIRE(fs::exists(one / "model.safetensors"));
  REQUIRE(!fs::exists(one / "model.safetensors.index.json"));

  // An index naming a tensor its file lacks is rejected.
  std::ofstream(dir / "model.safetensors.index.json")
      << R"({"metadata":{},)"
         R"("weight_map":{"t0":"model-00001-of-00003.safetensors","t4":"model-00001-of-00003.safetensors"}})";
  REQUIRE_THROWS_WITH(st::WeightSet(dir.string()), Catch::Contains("t4"));
  cleanup();
}
