#include "core/checkpoint/fault_inject.h"
#include "core/common/error.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

namespace gptrain::checkpoint {

namespace {
enum class Fault { none, fail, kill };
enum class Event { rename, tensor_file, tracker };

// What to do at this event, from GPTRAIN_FAULT_INJECT ("<what>:N": fail or kill at the Nth event of its kind).
Fault fault_at(Event event) {
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
  const auto colon = spec.find(':');
  const std::string what = spec.substr(0, colon);
  const long at = colon == std::string::npos ? 0 : std::atol(spec.c_str() + colon + 1);
  const bool renames = what == "rename" || what == "kill-at-rename";
  const bool files = what == "tensor-file" || what == "kill-at-tensor-file";
  const bool tracker = what == "tracker";
  if ((!renames && !files && !tracker) || at <= 0)
    fail(
        "GPTRAIN_FAULT_INJECT={}: expected rename:N, kill-at-rename:N, tensor-file:N, kill-at-tensor-file:N or "
        "tracker:N with N >= 1",
        spec);
  const Event hooked = renames ? Event::rename : files ? Event::tensor_file : Event::tracker;
  if (event != hooked) return Fault::none;
  if (++count != at) return Fault::none;
  return what.rfind("kill-at-", 0) == 0 ? Fault::kill : Fault::fail;
}
}  // namespace

void commit_rename(const std::string& from, const std::string& to, std::error_code& ec) {
  switch (fault_at(Event::rename)) {
    case Fault::fail: ec = std::error_code(EIO, std::generic_category()); return;
    case Fault::kill: ::kill(::getpid(), SIGKILL); break;
    case Fault::none: break;
  }
  std::filesystem::rename(from, to, ec);
}

void tensor_file_fault_point(const std::string& path) {
  switch (fault_at(Event::tensor_file)) {
    case Fault::fail: fail("{}: cannot write: {} (GPTRAIN_FAULT_INJECT)", path, std::strerror(EIO));
    case Fault::kill: ::kill(::getpid(), SIGKILL); break;
    case Fault::none: break;
  }
}

int tracker_write_fault() { return fault_at(Event::tracker) == Fault::fail ? ENOSPC : 0; }

}  // namespace gptrain::checkpoint
