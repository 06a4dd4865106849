#include "core/common/log.h"
#include "core/common/log_level.h"

#include "core/common/error.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace gptrain::log {
namespace {
struct State {
  int rank = 0;
  int world = 1;
  bool silenced = false;
  bool primary = false;
  Level level = Level::info;
  bool write_failed = false;  // said once
  std::mutex mu;
};
State& state() {
  static State s;
  return s;
}

// A log that cannot be written (stdout closed, on a full disk, its pipe's reader gone) does not stop a
// training run: the checkpoints matter more. It is said once on stderr, which may still be open.
void put(State& s, const std::string& text, std::FILE* out) {
  const bool ok = std::fwrite(text.data(), 1, text.size(), out) == text.size() && std::fflush(out) == 0;
  const int e = errno;
  if (ok || s.write_failed) return;
  s.write_failed = true;
  std::clearerr(out);
  const std::string note = fmt::format(
      "warning: {}: write failed ({}); this process's log lines are lost from "
      "here on (--metrics-file and --tensorboard-dir still record the run)\n",
      out == stdout ? "stdout" : "stderr", std::strerror(e));
  if (out != stderr) std::fwrite(note.data(), 1, note.size(), stderr);
  std::fflush(stderr);
}
}  // namespace

void set_rank(int rank, int world_size) {
  state().rank = rank;
  state().world = world_size;
}
void set_silenced(bool silenced) { state().silenced = silenced; }
void set_primary(bool primary) { state().primary = primary; }
void set_level(Level level) { state().level = level; }

namespace {
void emit(Level level, std::string_view message) {
  State& s = state();
  if (s.silenced && level < Level::warn) return;
  std::FILE* out = level >= Level::warn ? stderr : stdout;
  std::string line;
  if (s.world > 1 && !s.primary) line = fmt::format("[rank {}] ", s.rank);
  if (level == Level::warn) line += "warning: ";
  if (level == Level::error) line += "error: ";
  line.append(message);
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(s.mu);
  put(s, line, out);
}
}  // namespace

void write(Level level, std::string_view message) {
  if (level < state().level) return;
  emit(level, message);
}

void training_log(std::string_view line) { emit(Level::info, line); }

void set_python_logging_level(std::optional<int> flag) {
  std::optional<int> level = flag;
  if (!level) {
    if (const char* env = std::getenv("MEGATRON_LOGGING_LEVEL")) {
      char* end = nullptr;
      const long v = std::strtol(env, &end, 10);
      check(*env != '\0' && *end == '\0',
            "MEGATRON_LOGGING_LEVEL={}: expected an integer (a Python logging level: "
            "10 DEBUG, 20 INFO, 30 WARNING, 40 ERROR, 50 CRITICAL)",
            env);
      level = int(v);
    }
  }
  if (!level) return;
  set_level(*level <= 10 ? Level::debug : *level <= 20 ? Level::info : *level <= 30 ? Level::warn : Level::error);
}

void report(std::string_view message) {
  State& s = state();
  const std::string prefix = s.world > 1 && !s.primary ? fmt::format("[rank {}] ", s.rank) : "";
  std::string out;
  while (!message.empty()) {
    const std::size_t nl = message.find('\n');
    out += prefix;
    out.append(message.substr(0, nl));
    out.push_back('\n');
    message.remove_prefix(nl == std::string_view::npos ? message.size() : nl + 1);
  }
  std::lock_guard<std::mutex> lock(s.mu);
  put(s, out, stdout);
}

}  // namespace gptrain::log
