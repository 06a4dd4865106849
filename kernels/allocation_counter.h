// What a backend holds through Backend::alloc: bytes now, their peak and the live allocations. Those are
// the training state's arenas and buffers (parameters, gradients, optimizer state, activations, pipeline and
// optimizer workspaces); the CUDA backend's own scratch (cuBLASLt, its Workspace, cuDNN) is not allocated
// through alloc and is not counted. Header-only: the CUDA backend's library shares it without linking
// kernels/backend.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <unordered_map>

namespace gptrain {

struct AllocatedBytes {
  std::size_t current = 0, peak = 0, count = 0;  // bytes held now, the most held at once, live allocations
};

class AllocationCounter {
 public:
  void allocated(const void* p, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[p] = bytes;
    totals_.current += bytes;
    totals_.peak = std::max(totals_.peak, totals_.current);
    totals_.count = sizes_.size();
  }
  // A pointer not from alloc (or null) changes nothing.
  void released(const void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = sizes_.find(p);
    if (it == sizes_.end()) return;
    totals_.current -= it->second;
    sizes_.erase(it);
    totals_.count = sizes_.size();
  }
  AllocatedBytes totals() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return totals_;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_map<const void*, std::size_t> sizes_;
  AllocatedBytes totals_;
};

}  // namespace gptrain
