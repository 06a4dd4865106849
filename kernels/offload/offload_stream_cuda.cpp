// Offload copies on CUDA: a non-blocking copy stream beside the backend's compute stream, pinned host
// buffers, one event per slot for the compute stream to wait on.
#include "kernels/offload/offload_stream.h"

#include "core/common/error.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_plugin.h"

#include <vector>

namespace gptrain {

namespace {

class CudaOffloadStream final : public OffloadStream {
 public:
  CudaOffloadStream(cuda::CudaBackend& be, int slots) : compute_(be.stream()) {
    GPTRAIN_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
    GPTRAIN_CUDA_CHECK(cudaEventCreateWithFlags(&issued_, cudaEventDisableTiming));
    done_.resize(std::size_t(slots));
    for (cudaEvent_t& e : done_) GPTRAIN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  ~CudaOffloadStream() override {
    cudaStreamSynchronize(copy_);
    for (cudaEvent_t e : done_) cudaEventDestroy(e);
    cudaEventDestroy(issued_);
    cudaStreamDestroy(copy_);
  }
  void* alloc_host(std::size_t bytes) override {
    void* p = nullptr;
    GPTRAIN_CUDA_CHECK(cudaMallocHost(&p, bytes > 0 ? bytes : 1));
    return p;
  }
  void free_host(void* p) override { GPTRAIN_CUDA_CHECK(cudaFreeHost(p)); }
  void to_host(void* host_dst, const void* src, std::size_t bytes, int slot) override {
    copy(host_dst, src, bytes, cudaMemcpyDeviceToHost, slot);
  }
  void to_device(void* dst, const void* host_src, std::size_t bytes, int slot) override {
    copy(dst, host_src, bytes, cudaMemcpyHostToDevice, slot);
  }
  void wait_for_slot(int slot) override { GPTRAIN_CUDA_CHECK(cudaStreamWaitEvent(compute_, event(slot), 0)); }
  void synchronize() override { GPTRAIN_CUDA_CHECK(cudaStreamSynchronize(copy_)); }

 private:
  cudaEvent_t event(int slot) {
    check(slot >= 0 && std::size_t(slot) < done_.size(), "offload stream: slot {} of {}", slot, done_.size());
    return done_[std::size_t(slot)];
  }
  void copy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, int slot) {
    cudaEvent_t done = event(slot);
    // After the compute issued so far (it wrote what goes to the host, or read what is overwritten).
    GPTRAIN_CUDA_CHECK(cudaEventRecord(issued_, compute_));
    GPTRAIN_CUDA_CHECK(cudaStreamWaitEvent(copy_, issued_, 0));
    GPTRAIN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, kind, copy_));
    GPTRAIN_CUDA_CHECK(cudaEventRecord(done, copy_));
  }

  cudaStream_t compute_;
  cudaStream_t copy_ = nullptr;
  cudaEvent_t issued_ = nullptr;
  std::vector<cudaEvent_t> done_;
};

}  // namespace

}  // namespace gptrain

gptrain::OffloadStream* gptrain_cuda_make_offload_stream(gptrain::Backend* be, int slots) {
  using namespace gptrain;
  auto* cuda_be = dynamic_cast<cuda::CudaBackend*>(be);
  check(cuda_be != nullptr, "activation offloading: backend {} is not the CUDA backend", be->name());
  return new CudaOffloadStream(*cuda_be, slots);
}
