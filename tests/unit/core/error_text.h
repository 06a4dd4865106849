// The message of the gptrain::Error a call throws, or "" when it returns: for tests that check refusals.
#pragma once

#include "core/common/error.h"

#include <string>
#include <utility>

namespace gptrain::test {

inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

template <typename F>
std::string error_text(F&& call) {
  try {
    std::forward<F>(call)();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace gptrain::test
