// A do-nothing kernel whose attributes tell whether this binary carries code the GPU can run.
#include "kernels/cuda/probe.h"

namespace gptrain::cuda {

namespace {
__global__ void probe_kernel(int* p) {
  if (p) *p = 0;
}
}  // namespace

cudaError_t probe_kernel_image() {
  cudaFuncAttributes attr{};
  return cudaFuncGetAttributes(&attr, probe_kernel);
}

}  // namespace gptrain::cuda
