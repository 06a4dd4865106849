#include "core/train/device_memory.h"

namespace gptrain {

std::optional<DeviceMemory> cuda_device_memory() { return std::nullopt; }

}  // namespace gptrain
