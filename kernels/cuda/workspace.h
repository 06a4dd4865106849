// A grow-only device scratch buffer for ops that need temporaries (partial sums of deterministic
// reductions, sort buffers, attention row statistics). Growing frees the old buffer: cudaFree waits
// for the device, so work in flight that used it has finished.
#pragma once

#include <cstddef>

namespace gptrain::cuda {

class Workspace {
 public:
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace();
  // At least `bytes` bytes of device memory, 256-byte aligned; valid until the next get().
  void* get(std::size_t bytes);
  std::size_t capacity() const { return cap_; }

 private:
  void* ptr_ = nullptr;
  std::size_t cap_ = 0;
};

// Carves consecutive 256-byte-aligned pieces out of one workspace block.
class Carver {
 public:
  explicit Carver(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(std::size_t count) {
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += (count * sizeof(T) + 255) / 256 * 256;
    return p;
  }
  std::size_t used() const { return used_; }

 private:
  char* base_;
  std::size_t used_ = 0;
};

// Bytes a Carver uses for `count` elements of T.
template <typename T>
constexpr std::size_t carve_bytes(std::size_t count) {
  return (count * sizeof(T) + 255) / 256 * 256;
}

}  // namespace gptrain::cuda
