// The logger: with the active profiler slot (core/common/profile_range.h), the only global mutable
// state in gptrain. Lines go to stdout (info) or stderr (warn, error), prefixed with "[rank r] " in
// multi-rank runs, except on the primary rank, whose lines read exactly as a single process's
// (Megatron's last rank prints the training log unprefixed); a rank can be silenced (Megatron prints
// most lines from one rank only).
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace gptrain::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3 };

// Called once after the process grid is known. world_size == 1 disables the rank prefix.
void set_rank(int rank, int world_size);
// The primary rank writes no rank prefix (the rank that prints the training log).
void set_primary(bool primary);
// A silenced rank prints only warnings and errors.
void set_silenced(bool silenced);
void set_level(Level level);

void write(Level level, std::string_view message);
// Output the user asked of this rank (--profile's tables): printed to stdout even when the rank is
// silenced, every line of a multi-line message carrying the rank prefix.
void report(std::string_view message);

template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::info, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warn(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::warn, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::error, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void debug(fmt::format_string<Args...> f, Args&&... args) {
  write(Level::debug, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace gptrain::log
