// The one error type of gptrain. User mistakes (bad flags, bad files, bad config) are thrown as
// gptrain::Error with a message that says what went wrong, where (file:line, flag) and what was
// expected; apps catch it in main() and exit non-zero with that message, never with a stack dump.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace gptrain {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Throw an Error with a fmt-formatted message: fail("{}:{}: expected a JSON object", path, line).
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

// check(cond, "...") throws Error when cond is false.
template <typename... Args>
void check(bool cond, fmt::format_string<Args...> f, Args&&... args) {
  if (!cond) throw Error(fmt::format(f, std::forward<Args>(args)...));
}

// Run an app's body: maps gptrain::Error (and any other exception) to a message on stderr and exit
// code 1, so every app behaves the same on bad input.
int run_main(const char* app, int (*body)(int, char**), int argc, char** argv);

}  // namespace gptrain
