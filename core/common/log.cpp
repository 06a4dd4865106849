#include "core/common/log.h"

#include <cstdio>
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
  std::mutex mu;
};
State& state() {
  static State s;
  return s;
}
}  // namespace

void set_rank(int rank, int world_size) {
  state().rank = rank;
  state().world = world_size;
}
void set_silenced(bool silenced) { state().silenced = silenced; }
void set_primary(bool primary) { state().primary = primary; }
void set_level(Level level) { state().level = level; }

void write(Level level, std::string_view message) {
  State& s = state();
  if (level < s.level) return;
  if (s.silenced && level < Level::warn) return;
  std::FILE* out = level >= Level::warn ? stderr : stdout;
  std::string line;
  if (s.world > 1 && !s.primary) line = fmt::format("[rank {}] ", s.rank);
  if (level == Level::warn) line += "warning: ";
  if (level == Level::error) line += "error: ";
  line.append(message);
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(s.mu);
  std::fwrite(line.data(), 1, line.size(), out);
  std::fflush(out);
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
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
}

}  // namespace gptrain::log
