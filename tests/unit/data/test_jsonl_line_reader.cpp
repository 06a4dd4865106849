// LineReader: plain / gzip (several members) / zstd give the same lines; CRLF, a missing final newline,
// empty lines and lines longer than the read buffer; corrupt compressed data is an error.
#include "core/common/error.h"
#include "data/jsonl/line_reader.h"

#include <catch2/catch.hpp>
#include <zlib.h>
#include <zstd.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

fs::path lines_scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / fmt::format("gptrain_test_lines_{}", ::getpid());
  fs::create_directories(dir);
  return dir / name;
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> read_lines(const fs::path& p) {
  gptrain::LineReader r(p.string());
  std::vector<std::string> out;
  std::string_view line;
  while (r.next(line)) {
    out.emplace_back(line);
    CHECK(r.line_number() == static_cast<int64_t>(out.size()));
  }
  return out;
}

std::string gzip_member(const std::string& data) {
  z_stream z{};
  REQUIRE(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&z, Z_FINISH) == Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string zstd_frame(const std::string& data) {
  std::string out(ZSTD_compressBound(data.size()), '\0');
  const size_t n = ZSTD_compress(out.data(), out.size(), data.data(), data.size(), 3);
  REQUIRE(!ZSTD_isError(n));
  out.resize(n);
  return out;
}

}  // namespace

TEST_CASE("jsonl lines: plain, gzip and zstd inputs give the same lines") {
  const std::string long_line(3 << 20, 'x');  // longer than the 1 MiB read buffer
  const std::string text = "first\r\nsecond\n\n" + long_line + "\nlast without newline";
  const std::vector<std::string> want = {"first", "second", "", long_line, "last without newline"};
  write_file(lines_scratch("a.jsonl"), text);
  CHECK(read_lines(lines_scratch("a.jsonl")) == want);
  const size_t half = text.size() / 2;  // two gzip members, as `cat a.gz b.gz` makes
  write_file(lines_scratch("a.jsonl.gz"), gzip_member(text.substr(0, half)) + gzip_member(text.substr(half)));
  CHECK(read_lines(lines_scratch("a.jsonl.gz")) == want);
  write_file(lines_scratch("a.jsonl.zst"), zstd_frame(text.substr(0, half)) + zstd_frame(text.substr(half)));
  CHECK(read_lines(lines_scratch("a.jsonl.zst")) == want);
  write_file(lines_scratch("empty.jsonl"), "");
  CHECK(read_lines(lines_scratch("empty.jsonl")).empty());
  fs::remove_all(lines_scratch("").parent_path());
}

TEST_CASE("jsonl lines: corrupt or truncated compressed input is an error") {
  std::string text;  // varied bytes, so that a flipped compressed byte cannot decode to the same output
  for (uint32_t i = 0, x = 1; i < 100000; ++i) {
    x = x * 1664525u + 1013904223u;
    text.push_back(static_cast<char>('a' + (x >> 24) % 26));
  }
  std::string gz = gzip_member(text);
  write_file(lines_scratch("t.jsonl.gz"), gz.substr(0, gz.size() / 2));
  CHECK_THROWS_WITH(read_lines(lines_scratch("t.jsonl.gz")), Catch::Contains("truncated gzip"));
  gz[gz.size() / 2] ^= 0x55;
  gz[gz.size() / 2 + 1] ^= 0x55;
  write_file(lines_scratch("c.jsonl.gz"), gz);
  CHECK_THROWS_AS(read_lines(lines_scratch("c.jsonl.gz")), gptrain::Error);
  write_file(lines_scratch("notgz.jsonl.gz"), "plain text, not gzip\n");
  CHECK_THROWS_WITH(read_lines(lines_scratch("notgz.jsonl.gz")), Catch::Contains("corrupt gzip"));
  const std::string zst = zstd_frame(text);
  write_file(lines_scratch("t.jsonl.zst"), zst.substr(0, zst.size() - 3));
  CHECK_THROWS_WITH(read_lines(lines_scratch("t.jsonl.zst")), Catch::Contains("truncated zstd"));
  write_file(lines_scratch("notzst.jsonl.zst"), "plain text, not zstd\n");
  CHECK_THROWS_WITH(read_lines(lines_scratch("notzst.jsonl.zst")), Catch::Contains("corrupt zstd"));
  CHECK_THROWS_WITH(read_lines(lines_scratch("missing.jsonl")), Catch::Contains("cannot open input"));
  fs::remove_all(lines_scratch("").parent_path());
}
