#include "core/checkpoint/retention.h"

#include "core/checkpoint/checkpoint.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <optional>
#include <system_error>

namespace gptrain::checkpoint {

namespace fs = std::filesystem;

namespace {

// "iter_0000120" -> 120; anything else (release, temporaries, other files) -> nullopt.
std::optional<int64_t> iteration_of(const std::string& name) {
  const std::string prefix = "iter_";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0 || name.size() > prefix.size() + 18)
    return std::nullopt;
  const std::string digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); })) return std::nullopt;
  const int64_t n = std::stoll(digits);
  if (Step::at(n).dir_name() != name) return std::nullopt;  // the exact name gptrain writes
  return n;
}

}  // namespace

namespace {

std::vector<int64_t> delete_superseded(const std::string& save_dir, int64_t latest,
                                       const std::function<bool(int64_t)>& keep) {
  std::optional<int64_t> tracked;
  if (const std::optional<Step> t = read_tracker(save_dir); t && !t->release) tracked = t->iteration;
  std::vector<int64_t> doomed;
  for (const int64_t n : saved_iterations(save_dir))
    if (n < latest && !keep(n) && n != tracked) doomed.push_back(n);
  for (const int64_t n : doomed) {
    const fs::path dir = fs::path(save_dir) / Step::at(n).dir_name();
    const fs::path gone = fs::path(save_dir) / fmt::format(".{}.deleting", Step::at(n).dir_name());
    fs::remove_all(gone);
    fs::rename(dir, gone);
    fs::remove_all(gone);
  }
  return doomed;
}

}  // namespace

std::vector<int64_t> saved_iterations(const std::string& dir) {
  std::vector<int64_t> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::optional<int64_t> n = iteration_of(e.path().filename().string());
    if (n && e.is_directory(ec) && fs::exists(e.path() / "metadata.json", ec)) found.push_back(*n);
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::vector<int64_t> delete_unretained(const std::string& save_dir, int64_t latest, int64_t retain_interval) {
  return delete_superseded(save_dir, latest, [&](int64_t n) { return n % retain_interval == 0; });
}

std::vector<int64_t> delete_older(const std::string& save_dir, int64_t latest) {
  return delete_superseded(save_dir, latest, [](int64_t) { return false; });
}

}  // namespace gptrain::checkpoint
