// Free and total memory of the current CUDA device (cudaMemGetInfo), for the memory plan's fit check.
// Plain C++ header; device_memory_cuda.cpp / device_memory_nocuda.cpp define it.
#pragma once

#include <cstddef>
#include <optional>

namespace gptrain {

struct DeviceMemory {
  std::size_t free = 0, total = 0;
};

// std::nullopt in a build without CUDA; throws gptrain::Error when the CUDA query fails.
std::optional<DeviceMemory> cuda_device_memory();

}  // namespace gptrain
