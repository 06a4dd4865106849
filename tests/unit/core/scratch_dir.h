// A per-process scratch folder for file-writing tests: <temp>/gptrain_test_<tag>_<pid>, so parallel
// ctest processes never share files. Removed by remove() at the end of a passing test (kept on
// failure, for inspection).
#pragma once

#include <fmt/format.h>

#include <filesystem>
#include <string>
#include <utility>
#include <unistd.h>

namespace gptrain::test {

class ScratchDir {
 public:
  explicit ScratchDir(std::string tag) : tag_(std::move(tag)) {}

  // Resolved on use, not at construction: a bad TMPDIR fails the test that writes, not static init.
  std::filesystem::path root() const {
    return std::filesystem::temp_directory_path() / fmt::format("gptrain_test_{}_{}", tag_, ::getpid());
  }

  // An empty folder root/name (whatever was there before is removed).
  std::filesystem::path fresh(const std::string& name) const {
    std::filesystem::path p = root() / name;
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
    return p;
  }

  void remove() const { std::filesystem::remove_all(root()); }

 private:
  std::string tag_;
};

}  // namespace gptrain::test
