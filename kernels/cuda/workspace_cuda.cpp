#include "kernels/cuda/workspace.h"

#include <cuda_runtime_api.h>

#include "kernels/cuda/check.h"

namespace gptrain::cuda {

Workspace::~Workspace() {
  if (ptr_) cudaFree(ptr_);  // no throw from a destructor; a failure here has nothing left to protect
}

void* Workspace::get(std::size_t bytes) {
  if (bytes <= cap_) return ptr_;
  if (ptr_) {
    GPTRAIN_CUDA_CHECK(cudaFree(ptr_));
    ptr_ = nullptr;
    cap_ = 0;
  }
  const std::size_t want = workspace_grown_capacity(bytes);
  GPTRAIN_CUDA_CHECK(cudaMalloc(&ptr_, want));
  cap_ = want;
  return ptr_;
}

}  // namespace gptrain::cuda
