#include "core/checkpoint/fault_inject.h"
#include "core/common/error.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace gptrain::checkpoint {

namespace {
enum class Fault { none, fail, kill };

// What to do at this rename, from GPTRAIN_FAULT_INJECT.
Fault fault_for_next_rename() {
  static std::mutex mu;
  static std::string seen;
  static long count = 0;
  const char* env = std::getenv("GPTRAIN_FAULT_INJECT");
  const std::string spec = env ? env : "";
  std::lock_guard lock(mu);
  if (spec != seen) {
    seen = spec;
    count = 0;
  }
  if (spec.empty()) return Fault::none;
  ++count;
  const auto colon = spec.find(':');
  const std::string what = spec.substr(0, colon);
  const long at = colon == std::string::npos ? 0 : std::atol(spec.c_str() + colon + 1);
  if ((what != "rename" && what != "kill-at-rename") || at <= 0)
    fail("GPTRAIN_FAULT_INJECT={}: expected rename:N or kill-at-rename:N with N >= 1", spec);
  if (count != at) return Fault::none;
  return what == "rename" ? Fault::fail : Fault::kill;
}
}  // namespace

void commit_rename(const std::string& from, const std::string& to, std::error_code& ec) {
  switch (fault_for_next_rename()) {
    case Fault::fail: ec = std::error_code(EIO, std::generic_category()); return;
    case Fault::kill: ::kill(::getpid(), SIGKILL); break;
    case Fault::none: break;
  }
  std::filesystem::rename(from, to, ec);
}

}  // namespace gptrain::checkpoint
