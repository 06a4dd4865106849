#include "kernels/offload/offload_stream.h"

#include "core/common/plugin.h"
#include "kernels/cuda/cuda_plugin.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace gptrain {

namespace {

// CPU: the backend's memory is host memory; a copy is done when the call returns.
class CpuOffloadStream final : public OffloadStream {
 public:
  explicit CpuOffloadStream(Backend& be) : be_(be) {}
  void* alloc_host(std::size_t bytes) override { return std::malloc(bytes > 0 ? bytes : 1); }
  void free_host(void* p) override { std::free(p); }
  void to_host(void* host_dst, const void* src, std::size_t bytes, int) override {
    be_.copy_to_host(host_dst, src, bytes);
  }
  void to_device(void* dst, const void* host_src, std::size_t bytes, int) override {
    be_.copy_to_device(dst, host_src, bytes);
  }
  void wait_for_slot(int) override {}
  void synchronize() override {}

 private:
  Backend& be_;
};

}  // namespace

std::unique_ptr<OffloadStream> make_offload_stream(Backend& be, int slots) {
  if (std::string(be.name()) == "cuda") {
    // The CUDA stream (offload_stream_cuda.cpp, in the CUDA backend's library).
    auto* make = plugin::function<decltype(gptrain_cuda_make_offload_stream)>(
        kCudaPlugin, "gptrain_cuda_make_offload_stream", "activation offloading on CUDA");
    return std::unique_ptr<OffloadStream>(make(&be, slots));
  }
  return std::make_unique<CpuOffloadStream>(be);
}

}  // namespace gptrain
