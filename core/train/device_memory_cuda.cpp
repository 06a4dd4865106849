// Status: compiled, not yet run on a GPU.
#include "core/common/error.h"
#include "core/train/device_memory.h"

#include <cuda_runtime.h>

namespace gptrain {

std::optional<DeviceMemory> cuda_device_memory() {
  DeviceMemory m;
  const cudaError_t e = cudaMemGetInfo(&m.free, &m.total);
  if (e != cudaSuccess) fail("cudaMemGetInfo failed: {}", cudaGetErrorString(e));
  return m;
}

}  // namespace gptrain
