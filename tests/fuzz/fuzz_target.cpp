#include "tests/fuzz/fuzz_target.h"

#include "core/common/error.h"

#include <fstream>
#include <sstream>

namespace gptrain::fuzz {

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  check(f.good(), "fuzz: cannot write {}", path.string());
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  check(f.good(), "fuzz: cannot read {}", path.string());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string pack_files(const std::vector<std::pair<std::string, std::string>>& files) {
  std::string out;
  for (const auto& [name, bytes] : files) out += name + "\n" + std::to_string(bytes.size()) + "\n" + bytes;
  return out;
}

void unpack_files(const std::string& input, const fs::path& in, const std::vector<std::string>& names) {
  // Files the framing lost are written empty, so the parser always finds every file it opens.
  size_t at = 0;
  for (const auto& name : names) {
    std::string bytes;
    const size_t nl = input.find('\n', at);
    const size_t nl2 = nl == std::string::npos ? nl : input.find('\n', nl + 1);
    if (nl2 != std::string::npos) {
      size_t len = 0;
      for (size_t i = nl + 1; i < nl2 && len < input.size(); ++i)
        len = (input[i] >= '0' && input[i] <= '9') ? len * 10 + static_cast<size_t>(input[i] - '0') : len;
      bytes = input.substr(nl2 + 1, std::min(len, input.size() - nl2 - 1));
      at = nl2 + 1 + bytes.size();
    } else {
      at = input.size();
    }
    write_file(in / name, bytes);
  }
}

}  // namespace gptrain::fuzz
