// map_npy on damaged index-cache files (found by tests/fuzz): every one is refused with
// gptrain::Error naming the file, never std::out_of_range or a wrapped-around size.
#include "../core/error_text.h"
#include "data/gpt_dataset/npy_file.h"

#include <catch2/catch.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace {

// A .npy file with the given header text (padded as numpy pads it) and data bytes.
std::string write_npy_file(const std::string& name, std::string header, size_t data_bytes, bool pad = true) {
  const fs::path dir = fs::temp_directory_path() / ("gptrain_test_npy_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  if (pad) {
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
  }
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
  bytes += static_cast<char>(header.size() & 0xff);
  bytes += static_cast<char>(header.size() >> 8);
  bytes += header + std::string(data_bytes, '\0');
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

std::string refusal(const std::string& path) {
  const std::string e = gptrain::test::error_text([&] { gptrain::map_npy(path); });
  CHECK(e.find(path) != std::string::npos);
  return e;
}

}  // namespace

TEST_CASE("npy: a well-formed header is read back") {
  const std::string p = write_npy_file("ok.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), }", 48);
  const gptrain::NpyArray a = gptrain::map_npy(p);
  REQUIRE(a.shape == std::vector<int64_t>{2, 3});
  REQUIRE(a.num_elements() == 6);
}

TEST_CASE("npy: 'fortran_order' with nothing after it is refused, not std::out_of_range") {
  // A header cut right after the key (its length field damaged): no padding, no newline.
  const std::string p = write_npy_file("order.npy", "{'descr': '<i8', 'shape': (2,), 'fortran_order':", 16, false);
  REQUIRE(refusal(p).find("fortran") != std::string::npos);
}

TEST_CASE("npy: a dimension of more digits than an int64 holds is refused, not std::out_of_range") {
  const std::string p = write_npy_file(
      "digits.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 8);
  REQUIRE(refusal(p).find("bad shape") != std::string::npos);
}

TEST_CASE("npy: a shape whose byte count wraps around to the file's size is refused") {
  // 2^32 x 2^29 int64 elements are 2^64 bytes, which wrapped to 0 and matched an empty data section.
  const std::string p =
      write_npy_file("wrap.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (4294967296, 536870912), }", 0);
  REQUIRE(refusal(p).find("more bytes than the file has") != std::string::npos);
}
