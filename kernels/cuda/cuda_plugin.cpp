// The CPU side of the CUDA backend: make_backend("cuda") and cuda_device_count load libgptrain_cuda.so on
// first use (a build without CUDA says so instead).
#include "kernels/cuda/cuda_plugin.h"

#include <dlfcn.h>

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/common/plugin.h"

namespace gptrain {

std::unique_ptr<Backend> make_cuda_backend(DType compute_dtype, const BackendOptions& options) {
  auto* make =
      plugin::function<decltype(gptrain_cuda_make_backend)>(kCudaPlugin, "gptrain_cuda_make_backend", "--device cuda");
  return std::unique_ptr<Backend>(make(compute_dtype, &options));
}

int cuda_device_count() {
  if (!plugin::built()) return 0;
  // Without the NVIDIA driver there is no GPU: answer without loading the CUDA libraries, so that
  // --device auto on a CPU machine stays a CPU run.
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (driver == nullptr) return 0;
  dlclose(driver);
  try {
    return plugin::function<decltype(gptrain_cuda_device_count)>(kCudaPlugin, "gptrain_cuda_device_count",
                                                                 "the cuda backend")();
  } catch (const Error& e) {
    log::warn("no usable CUDA device: {}", e.what());
    return 0;
  }
}

}  // namespace gptrain
