// Copies between a backend's memory and host memory that run beside the compute (activation offloading,
// core/model/activation_offload.h). On CUDA: pinned host buffers and a copy stream of its own, ordered
// against the compute stream with events, so a copy overlaps the kernels issued after it. On CPU the
// same calls copy at once (the bookkeeping is the same, so CPU tests prove it).
// Copies are tagged with a slot (0 .. slots-1): wait_for_slot orders the compute stream after the last
// copy of that slot, so compute may then read what a copy to the device brought, or overwrite what a
// copy to the host took away.
#pragma once

#include "kernels/backend.h"

#include <cstddef>
#include <memory>

namespace gptrain {

class OffloadStream {
 public:
  virtual ~OffloadStream() = default;
  // Host memory for the copies (page-locked on CUDA); release with free_host.
  virtual void* alloc_host(std::size_t bytes) = 0;
  virtual void free_host(void* p) = 0;
  // Backend memory -> host, after everything the compute stream has issued so far.
  virtual void to_host(void* host_dst, const void* src, std::size_t bytes, int slot) = 0;
  // Host -> backend memory, after everything the compute stream has issued so far.
  virtual void to_device(void* dst, const void* host_src, std::size_t bytes, int slot) = 0;
  // The compute stream waits for the last copy of `slot` (nothing to wait for on CPU).
  virtual void wait_for_slot(int slot) = 0;
  // The host waits for every copy issued (before host_free or reading a host buffer).
  virtual void synchronize() = 0;
};

// For `be` ("cpu" or "cuda"); `slots` tags.
std::unique_ptr<OffloadStream> make_offload_stream(Backend& be, int slots);

}  // namespace gptrain
