// A grow-only device scratch buffer for ops that need temporaries (partial sums of deterministic
// reductions, sort buffers, attention row statistics). Growing frees the old buffer: cudaFree waits
// for the device, so work in flight that used it has finished. The sizing rules (piece rounding, growth)
// are in workspace_size.h, which the memory plan reads too.
#pragma once

#include <cstddef>

#include "kernels/cuda/workspace_size.h"

namespace gptrain::cuda {

class Workspace {
 public:
  Workspace() = default;
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  ~Workspace();
  // At least `bytes` bytes of device memory, kWorkspaceAlign-aligned; valid until the next get(). A request
  // above the capacity reallocates to workspace_grown_capacity(bytes).
  void* get(std::size_t bytes);
  std::size_t capacity() const { return cap_; }

 private:
  void* ptr_ = nullptr;
  std::size_t cap_ = 0;
};

// Carves consecutive kWorkspaceAlign-aligned pieces out of one workspace block.
class Carver {
 public:
  explicit Carver(void* base) : base_(static_cast<char*>(base)) {}
  template <typename T>
  T* take(std::size_t count) {
    T* p = reinterpret_cast<T*>(base_ + used_);
    used_ += carve_bytes<T>(count);
    return p;
  }
  std::size_t used() const { return used_; }

 private:
  char* base_;
  std::size_t used_ = 0;
};

}  // namespace gptrain::cuda
