// Checkpoint checksums: every tensor file records a CRC-32C per tensor and metadata.json one of its content;
// a flipped bit anywhere in a tensor's bytes is found (by verify() and on read), naming file and tensor;
// files without checksums (written before them) still load; a file stamped for another iteration or save is
// refused; the fault hook for tensor-file writes; the listing and deletion of a save directory's iterations.
#include "core/checkpoint/checkpoint.h"
#include "core/checkpoint/integrity.h"
#include "core/checkpoint/retention.h"
#include "core/common/crc32c.h"
#include "core/safetensors/writer.h"

#include "error_text.h"
#include "scratch_dir.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>

namespace ck = gptrain::checkpoint;
namespace fs = std::filesystem;
using gptrain::test::error_text;

namespace {

const gptrain::test::ScratchDir kIntegrityScratch("ck_integrity");

struct Saved {
  std::vector<float> a = std::vector<float>(48), b = std::vector<float>(10);
  std::string dir;
};

// Two tensors in one model file, iteration `it` of save_dir.
Saved save(const fs::path& save_dir, int64_t it) {
  Saved s;
  std::iota(s.a.begin(), s.a.end(), 0.5f);
  std::iota(s.b.begin(), s.b.end(), -3.0f);
  const std::string tmp = ck::begin_save(save_dir.string(), ck::Step::at(it));
  const std::vector<ck::NamedTensor> t{{"a", {6, 8}, s.a.data(), {}}, {"b", {10}, s.b.data(), {}}};
  ck::write_tensor_file((fs::path(tmp) / ck::model_file_name(0, 0)).string(), t);
  ck::Metadata m;
  m.iteration = it;
  ck::write_metadata(tmp, m);
  ck::commit_save(save_dir.string(), ck::Step::at(it));
  s.dir = (save_dir / ck::Step::at(it).dir_name()).string();
  return s;
}

// Byte offset of the data section and of tensor `name` in a safetensors file.
std::pair<uint64_t, uint64_t> data_offset(const std::string& path, const std::string& name) {
  const gptrain::safetensors::Reader r(path);
  std::ifstream f(path, std::ios::binary);
  uint64_t n = 0;
  f.read(reinterpret_cast<char*>(&n), 8);
  return {8 + n, r.info(name).begin};
}

void flip_bit(const std::string& path, uint64_t at, int bit) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(at));
  char c = 0;
  f.read(&c, 1);
  c = static_cast<char>(c ^ (1 << bit));
  f.seekp(static_cast<std::streamoff>(at));
  f.write(&c, 1);
}

}  // namespace

TEST_CASE("checkpoint integrity: the recorded checksums are the CRC-32C of each tensor's bytes", "[checkpoint]") {
  const Saved s = save(kIntegrityScratch.fresh("record"), 1);
  const gptrain::safetensors::Reader r((fs::path(s.dir) / ck::model_file_name(0, 0)).string());
  const auto crcs = ck::recorded_checksums(r);
  REQUIRE(crcs.has_value());
  CHECK(crcs->size() == 2);
  CHECK(crcs->at("a") == gptrain::crc32c_extend(0, s.a.data(), s.a.size() * 4));
  CHECK(crcs->at("b") == gptrain::crc32c_extend(0, s.b.data(), s.b.size() * 4));
  CHECK(!ck::Checkpoint::open(fs::path(s.dir).parent_path().string()).verify());
}

TEST_CASE("checkpoint integrity: every single-bit flip in a tensor is found, naming file and tensor", "[checkpoint]") {
  const fs::path root = kIntegrityScratch.fresh("flip");
  const Saved s = save(root, 1);
  const std::string file = (fs::path(s.dir) / ck::model_file_name(0, 0)).string();
  const auto [data, b_begin] = data_offset(file, "b");
  // Every bit of tensor b (40 bytes): flip, check both detection paths, flip back.
  int found = 0;
  for (uint64_t byte = 0; byte < 40; ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      flip_bit(file, data + b_begin + byte, bit);
      const ck::Checkpoint c = ck::Checkpoint::open(root.string());
      const auto v = c.verify();
      const std::string read_err = error_text([&] { c.read_global(ck::Checkpoint::Kind::model, "b"); });
      if (v && v->find("tensor \"b\" is damaged") != std::string::npos && v->find(file) != std::string::npos &&
          read_err == *v)
        ++found;
      CHECK(error_text([&] { c.read_global(ck::Checkpoint::Kind::model, "a"); }).empty());  // a is intact
      flip_bit(file, data + b_begin + byte, bit);
    }
  CHECK(found == 320);
  CHECK(!ck::Checkpoint::open(root.string()).verify());
  // verify() in parts: the parts together find what one pass finds (here one file: part 0 of 2 holds it).
  flip_bit(file, data + b_begin, 0);
  const ck::Checkpoint c = ck::Checkpoint::open(root.string());
  CHECK(c.verify(0, 2).has_value());
  CHECK(!c.verify(1, 2).has_value());
}

TEST_CASE("checkpoint integrity: metadata.json content is checked, its white space is not", "[checkpoint]") {
  const fs::path root = kIntegrityScratch.fresh("meta");
  const Saved s = save(root, 3);
  const fs::path meta = fs::path(s.dir) / "metadata.json";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(meta));
  REQUIRE(j.contains("crc32c"));
  std::ofstream(meta) << j.dump(9);  // re-indented: same content
  CHECK(ck::read_metadata(s.dir).iteration == 3);
  j["iteration"] = 4;
  std::ofstream(meta) << j.dump(2);
  CHECK_THAT(error_text([&] { ck::read_metadata(s.dir); }),
             Catch::Contains("metadata.json: damaged") && Catch::Contains(meta.string()));
  j.erase("crc32c");  // metadata written before checksums: read as it is
  std::ofstream(meta) << j.dump(2);
  CHECK(ck::read_metadata(s.dir).iteration == 4);
}

TEST_CASE("checkpoint integrity: files without checksums load unverified, a malformed table is refused",
          "[checkpoint]") {
  const fs::path root = kIntegrityScratch.fresh("legacy");
  const Saved s = save(root, 1);
  const std::string file = (fs::path(s.dir) / ck::model_file_name(0, 0)).string();
  const auto write = [&](std::map<std::string, std::string> meta) {
    const std::vector<gptrain::safetensors::HostTensorRef> refs{
        {{"a", gptrain::safetensors::DType::F32, {6, 8}}, s.a.data()},
        {{"b", gptrain::safetensors::DType::F32, {10}}, s.b.data()}};
    gptrain::safetensors::write_file(file, refs, std::move(meta));
  };
  write({});
  {
    const ck::Checkpoint c = ck::Checkpoint::open(root.string());
    CHECK(!c.verify());
    CHECK(c.read_global(ck::Checkpoint::Kind::model, "b") == s.b);
  }
  write({{ck::kChecksumKey, "{\"a\": \"00000000\"}"}});
  CHECK_THAT(error_text([&] { ck::Checkpoint::open(root.string()); }),
             Catch::Contains(file) && Catch::Contains("tensor \"b\" has no checksum"));
  write({{ck::kChecksumKey, "{\"a\": \"xyz\", \"b\": \"00000000\"}"}});
  CHECK_THAT(error_text([&] { ck::Checkpoint::open(root.string()); }), Catch::Contains("8 hex digits"));
  write({{ck::kChecksumKey, "[1, 2"}});
  CHECK_THAT(error_text([&] { ck::Checkpoint::open(root.string()); }), Catch::Contains("not valid JSON"));
}

TEST_CASE("checkpoint stamps: a file of another iteration or save is refused, files without a stamp load",
          "[checkpoint]") {
  const fs::path root = kIntegrityScratch.fresh("stamp");
  const Saved s = save(root, 7);  // no stamp, no save_id: as written before stamps
  const std::string file = (fs::path(s.dir) / ck::model_file_name(0, 0)).string();
  CHECK(error_text([&] { ck::Checkpoint::open(root.string()); }).empty());
  const std::vector<ck::NamedTensor> t{{"a", {6, 8}, const_cast<float*>(s.a.data()), {}},
                                       {"b", {10}, const_cast<float*>(s.b.data()), {}}};
  const std::vector<std::pair<std::string, std::span<const ck::NamedTensor>>> files{{ck::model_file_name(0, 0), t}};
  const std::string id = ck::save_id_of(std::vector<uint32_t>{ck::files_digest(files)});
  ck::Metadata m;
  m.iteration = 7;
  m.save_id = id;
  ck::write_metadata(s.dir, m);
  for (const auto& [stamp, want] : std::vector<std::pair<ck::FileStamp, std::string>>{
           {{7, id}, ""},
           {{5, id}, "written for iteration 5, but " + s.dir + "/metadata.json is the checkpoint of iteration 7"},
           {{7, "0badc0de"}, "written by another save (save id 0badc0de; " + s.dir + "/metadata.json says " + id}}) {
    ck::write_tensor_file(file, t, stamp);
    const std::string err = error_text([&] { ck::Checkpoint::open(root.string()); });
    if (want.empty())
      CHECK(err.empty());
    else
      CHECK_THAT(err, Catch::Contains(file + ": " + want));
  }
  // The save id depends on the content: another value of one tensor gives another id.
  std::vector<float> b2 = s.b;
  b2[3] += 1.0f;
  const std::vector<ck::NamedTensor> t2{t[0], {"b", {10}, b2.data(), {}}};
  const std::vector<std::pair<std::string, std::span<const ck::NamedTensor>>> files2{{ck::model_file_name(0, 0), t2}};
  CHECK(ck::save_id_of(std::vector<uint32_t>{ck::files_digest(files2)}) != id);
  // Unstamped metadata (no save_id): a stamped file's save id is not compared; its iteration still is.
  m.save_id.clear();
  ck::write_metadata(s.dir, m);
  ck::write_tensor_file(file, t, ck::FileStamp{7, "0badc0de"});
  CHECK(error_text([&] { ck::Checkpoint::open(root.string()); }).empty());
}

TEST_CASE("checkpoint faults: tensor-file:N fails the Nth tensor file write, naming it", "[checkpoint]") {
  const fs::path root = kIntegrityScratch.fresh("fault");
  ::setenv("GPTRAIN_FAULT_INJECT", "tensor-file:2", 1);
  std::vector<float> x(4, 1.0f);
  const std::vector<ck::NamedTensor> t{{"x", {4}, x.data(), {}}};
  const std::string f1 = (root / "one.safetensors").string(), f2 = (root / "two.safetensors").string();
  CHECK(error_text([&] { ck::write_tensor_file(f1, t); }).empty());
  CHECK_THAT(error_text([&] { ck::write_tensor_file(f2, t); }), Catch::Contains(f2) && Catch::Contains("cannot write"));
  CHECK(!fs::exists(f2));
  CHECK(error_text([&] { ck::write_tensor_file(f2, t); }).empty());  // only the 2nd
  ::unsetenv("GPTRAIN_FAULT_INJECT");
}

TEST_CASE("retention: saved iterations and deleting all older ones", "[checkpoint]") {
  const fs::path root = kIntegrityScratch.fresh("older");
  for (const int64_t it : {2, 4, 6}) save(root, it);
  fs::create_directories(root / "iter_0000005");  // no metadata.json: not a checkpoint, never touched
  fs::create_directories(root / "iter_12");       // not gptrain's name
  CHECK(ck::saved_iterations(root.string()) == std::vector<int64_t>{2, 4, 6});
  CHECK(ck::delete_older(root.string(), 6) == std::vector<int64_t>{2, 4});
  CHECK(ck::saved_iterations(root.string()) == std::vector<int64_t>{6});
  CHECK(fs::exists(root / "iter_0000005"));
  CHECK(fs::exists(root / "iter_12"));
  kIntegrityScratch.remove();
}
