// Stand-ins for a build without CUDA: make_backend("cuda", ...) says why it cannot work, and no GPU is
// ever visible.
#include "core/common/error.h"
#include "kernels/backend.h"

namespace gptrain {

std::unique_ptr<Backend> make_cuda_backend(DType, const BackendOptions&) {
  fail(
      "this build has no CUDA backend (configured with GPTRAIN_CUDA=OFF or no CUDA toolkit found): reconfigure "
      "with -DGPTRAIN_CUDA=ON, or use --device cpu");
}

int cuda_device_count() { return 0; }

}  // namespace gptrain
