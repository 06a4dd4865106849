// TensorBoard event files: CRC-32C check values (RFC 3720 B.4 and the classic "123456789"), protobuf
// pieces encoded by hand, and files read back record by record with their CRCs verified. The hidden
// test "[.tensorboard_file]" writes a file that tests/integration/tensorboard_load.sh opens with the
// tensorboard Python package.
#include "core/common/error.h"
#include "core/common/crc32c.h"
#include "core/metrics/tensorboard_scalars.h"
#include "core/metrics/tensorboard_writer.h"
#include "core/metrics/tfevent.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

using namespace gptrain::metrics;
using gptrain::crc32c;
using gptrain::crc32c_extend;
using gptrain::mask_crc32c;
namespace fs = std::filesystem;

namespace {

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

uint64_t le(const std::string& s, size_t at, int width) {
  uint64_t v = 0;
  for (int i = width - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}
uint64_t le64(const std::string& s, size_t at) { return le(s, at, 8); }
uint32_t le32(const std::string& s, size_t at) { return static_cast<uint32_t>(le(s, at, 4)); }

// Split a TFRecord file into its payloads, checking both masked CRCs of every record.
std::vector<std::string> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string file = ss.str();
  std::vector<std::string> out;
  size_t at = 0;
  while (at < file.size()) {
    REQUIRE(at + 12 <= file.size());
    const uint64_t len = le64(file, at);
    CHECK(le32(file, at + 8) == mask_crc32c(crc32c(file.substr(at, 8))));
    REQUIRE(at + 12 + len + 4 <= file.size());
    const std::string data = file.substr(at + 12, len);
    CHECK(le32(file, at + 12 + len) == mask_crc32c(crc32c(data)));
    out.push_back(data);
    at += 12 + len + 4;
  }
  return out;
}

fs::path scratch_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / fmt::format("gptrain_tb_{}_{}", name, getpid());
  fs::remove_all(d);
  return d;
}

}  // namespace

TEST_CASE("tensorboard: CRC-32C check values", "[tensorboard]") {
  CHECK(crc32c("") == 0u);
  CHECK(crc32c("123456789") == 0xE3069283u);
  CHECK(crc32c(std::string(32, '\0')) == 0x8A9136AAu);
  CHECK(crc32c(std::string(32, '\xff')) == 0x62A8AB43u);
  std::string up, down;
  for (int i = 0; i < 32; ++i) {
    up.push_back(static_cast<char>(i));
    down.push_back(static_cast<char>(31 - i));
  }
  CHECK(crc32c(up) == 0x46DD794Eu);
  CHECK(crc32c(down) == 0x113FDB5Cu);
  // Extending piecewise equals one pass.
  CHECK(crc32c_extend(crc32c_extend(0, "12345", 5), "6789", 4) == 0xE3069283u);
  // The mask is TFRecord's rotate right by 15 plus a constant.
  CHECK(mask_crc32c(0) == 0xa282ead8u);
  CHECK(mask_crc32c(0x00008000u) == 0xa282ead8u + 1u);
}

TEST_CASE("crc32c: the hardware path equals the table at every length and alignment", "[tensorboard]") {
  std::string buf(4096 + 16, '\0');
  uint64_t s = 12345;
  for (auto& c : buf) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    c = static_cast<char>(s >> 56);
  }
  for (std::size_t offset = 0; offset < 9; ++offset)
    for (std::size_t n : {0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096}) {
      const char* p = buf.data() + offset;
      CHECK(crc32c_extend(0, p, n) == gptrain::crc32c_extend_portable(0, p, n));
      CHECK(crc32c_extend(0xdeadbeefu, p, n) == gptrain::crc32c_extend_portable(0xdeadbeefu, p, n));
    }
}

TEST_CASE("tensorboard: varints and hand-encoded events", "[tensorboard]") {
  auto varint = [](uint64_t v) {
    std::string s;
    tfevent::put_varint(s, v);
    return s;
  };
  CHECK(varint(0) == bytes({0x00}));
  CHECK(varint(127) == bytes({0x7f}));
  CHECK(varint(128) == bytes({0x80, 0x01}));
  CHECK(varint(300) == bytes({0xac, 0x02}));
  CHECK(varint(~uint64_t{0}) == bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));

  // Event{wall_time 0.0, file_version "brain.Event:2"}
  CHECK(tfevent::encode_file_version_event(0.0) == bytes({0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x1a, 13}) + "brain.Event:2");
  // Event{wall_time 1.5 (0x3FF8000000000000), step 300, summary{value{tag "a", simple_value 1.0f}}}
  CHECK(tfevent::encode_scalar_event(1.5, 300, "a", 1.0f) ==
        bytes({0x09, 0,    0,    0,    0,   0, 0, 0xf8, 0x3f,  // wall_time, fixed64
               0x10, 0xac, 0x02,                               // step, varint
               0x2a, 10,                                       // summary, 10 bytes
               0x0a, 8,                                        //   value, 8 bytes
               0x0a, 1,    'a',                                //     tag
               0x15, 0x00, 0x00, 0x80, 0x3f}));                //     simple_value, fixed32
  // Negative steps are 10-byte varints (int64 two's complement), as protobuf encodes them.
  CHECK(tfevent::encode_scalar_event(0.0, -1, "a", 0.0f).size() == 9 + 1 + 10 + 2 + 10);

  const std::string rec = tfevent::frame_record("hello");
  REQUIRE(rec.size() == 8 + 4 + 5 + 4);
  CHECK(le64(rec, 0) == 5);
  CHECK(le32(rec, 8) == mask_crc32c(crc32c(rec.substr(0, 8))));
  CHECK(rec.substr(12, 5) == "hello");
  CHECK(le32(rec, 17) == mask_crc32c(crc32c("hello")));
}

TEST_CASE("tensorboard: writer file name, version record, scalars, flush", "[tensorboard]") {
  const fs::path dir = scratch_dir("writer") / "nested";
  std::string first_path;
  {
    TensorBoardWriter w(dir.string());
    first_path = w.path();
    const std::string name = fs::path(w.path()).filename().string();
    CHECK(name.rfind("events.out.tfevents.", 0) == 0);
    CHECK(name.size() > std::string("events.out.tfevents.").size() + 10);
    CHECK(name.substr(name.size() - 2) == ".0");
    CHECK(read_records(w.path()).size() == 1);  // the version record is flushed at once
    w.add_scalar("lm loss", 1, 10.5);
    w.add_scalar("lm loss", 2, 9.25);
    w.flush();
    const auto recs = read_records(w.path());
    REQUIRE(recs.size() == 3);
    CHECK(recs[0].find("brain.Event:2") != std::string::npos);
    CHECK(recs[2].find("lm loss") != std::string::npos);
    float v = 0;
    std::memcpy(&v, recs[2].data() + recs[2].size() - 4, 4);
    CHECK(v == 9.25f);
    TensorBoardWriter second(dir.string());  // same second, same process: the next free number
    CHECK(second.path() != w.path());
  }
  CHECK(read_records(first_path).size() == 3);
  fs::remove_all(dir.parent_path());
  const fs::path blocked = scratch_dir("blocked");
  fs::create_directories(blocked.parent_path());
  std::ofstream(blocked.string()) << "a file, not a directory";
  CHECK_THROWS_AS(TensorBoardWriter((blocked / "tb").string()), gptrain::Error);
  fs::remove(blocked);
}

// Hidden: writes $GPTRAIN_TB_DIR for tests/integration/tensorboard_load.sh, which checks every value
// below through tensorboard's EventAccumulator.
TEST_CASE("tensorboard: file for the Python loader", "[.tensorboard_file]") {
  const char* dir = std::getenv("GPTRAIN_TB_DIR");
  REQUIRE(dir != nullptr);
  TensorBoardWriter w(dir);
  for (int step = 1; step <= 50; ++step) {
    w.add_scalar("lm loss", step, 11.0 - 0.125 * step);
    w.add_scalar("learning-rate", step, 6e-4 * step / 50.0);
  }
  w.add_scalar("negative step", -3, -1.5);
  w.add_scalar(std::string("long/") + std::string(200, 'x'), 1000000000000LL, 3.0e38);
  IterationLogValues v;
  v.iteration = 60;
  v.consumed_samples = 60 * 16;
  v.learning_rate = 3e-4;
  v.decoupled_learning_rate = 2e-3;
  v.global_batch_size = 16;
  v.losses = {{"lm loss", 4.5}};
  v.grad_norm = 0.75;
  v.tokens_per_second = 1234.5;
  write_train_scalars(w, v, TensorBoardOptions{});
  write_validation_scalars(w, 60, 960, {{"lm loss", 4.25}}, TensorBoardOptions{.log_validation_ppl = true});
  w.flush();
}
