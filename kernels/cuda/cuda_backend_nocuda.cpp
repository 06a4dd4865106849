// Stand-ins for a build without CUDA: the CUDA backend's entry points exist and say why they cannot work.
#include "core/common/error.h"
#include "kernels/cuda_backend.h"

namespace gptrain {

std::unique_ptr<Backend> make_cuda_backend(DType) {
  fail("the CUDA backend is not built in this binary (configured with GPTRAIN_CUDA=OFF or no CUDA toolkit found): "
       "reconfigure with -DGPTRAIN_CUDA=ON, or use --device cpu");
}

void configure_cuda_backend(Backend& b, const CudaBackendOptions&) {
  fail("configure_cuda_backend: backend '{}' is not the CUDA backend (this build has no CUDA)", b.name());
}

CudaBackendOptions cuda_backend_options(const Backend& b) {
  fail("cuda_backend_options: backend '{}' is not the CUDA backend (this build has no CUDA)", b.name());
}

CudaScratchBytes cuda_backend_scratch(const Backend& b) {
  fail("cuda_backend_scratch: backend '{}' is not the CUDA backend (this build has no CUDA)", b.name());
}

}  // namespace gptrain
