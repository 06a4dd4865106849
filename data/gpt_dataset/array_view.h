// A read-only typed array that either owns its storage (a vector built in memory) or borrows it from a
// memory-mapped cache file; `keep` holds whichever owner alive.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace gptrain {

template <typename T>
struct ArrayView {
  std::shared_ptr<const void> keep;
  const T* ptr = nullptr;
  int64_t n = 0;

  static ArrayView owning(std::vector<T>&& v) {
    auto holder = std::make_shared<std::vector<T>>(std::move(v));
    ArrayView a;
    a.ptr = holder->data();
    a.n = static_cast<int64_t>(holder->size());
    a.keep = std::move(holder);
    return a;
  }
  int64_t size() const { return n; }
  const T& operator[](int64_t i) const { return ptr[i]; }
  const T* begin() const { return ptr; }
  const T* end() const { return ptr + n; }
};

}  // namespace gptrain
