#include "data/jsonl/input_files.h"

#include "core/common/error.h"

#include <glob.h>
#include <sys/stat.h>

#include <algorithm>

namespace gptrain {

namespace {

void check_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail("--input {}: file not found", path);
  if (S_ISDIR(st.st_mode)) fail("--input {}: is a directory (give files or a glob such as {}/*.jsonl)", path, path);
  for (const char* ext : {".jsonl", ".json", ".jsonl.gz", ".json.gz", ".jsonl.zst", ".json.zst"})
    if (path.ends_with(ext)) return;
  fail("--input {}: expected a .jsonl, .json, .jsonl.gz or .jsonl.zst file (JSON lines)", path);
}

}  // namespace

std::vector<std::string> expand_input_files(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& a : args) {
    if (a.find_first_of("*?[") == std::string::npos) {
      check_file(a);
      files.push_back(a);
      continue;
    }
    glob_t g{};
    const int rc = ::glob(a.c_str(), 0, nullptr, &g);
    std::vector<std::string> matches;
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) matches.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
    if (rc == GLOB_NOMATCH || matches.empty()) fail("--input {}: the pattern matches no file", a);
    if (rc != 0) fail("--input {}: cannot expand the pattern", a);
    std::sort(matches.begin(), matches.end());
    for (const auto& m : matches) {
      check_file(m);
      files.push_back(m);
    }
  }
  return files;
}

}  // namespace gptrain
