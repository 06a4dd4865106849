// Seconds elapsed on the steady clock, for timings in logs and timeouts.
#pragma once

#include <chrono>

namespace gptrain {

inline double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace gptrain
