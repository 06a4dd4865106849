#pragma once

#include <cuda_runtime_api.h>

namespace gptrain::cuda {
// cudaErrorNoKernelImageForDevice (or cudaErrorInvalidDeviceFunction) when the binary has no SASS
// or PTX for the current device's architecture.
cudaError_t probe_kernel_image();
}  // namespace gptrain::cuda
