// make_backend: the one place that maps a backend name and compute dtype to an implementation.
#include "kernels/backend.h"

#include "core/common/error.h"
#ifdef GPTRAIN_HAVE_CUDA
#include "kernels/cuda_backend.h"
#endif

namespace gptrain {

// kernels/cpu/cpu_backend.cpp (the class is private to that file).
std::unique_ptr<Backend> make_cpu_backend();

std::unique_ptr<Backend> make_backend(const std::string& name, DType compute_dtype) {
  if (name == "cpu") {
    check(compute_dtype == DType::F32,
          "the cpu backend computes in fp32 only, {} was requested (drop --bf16/--fp16 or use the cuda backend)",
          dtype_name(compute_dtype));
    return make_cpu_backend();
  }
  if (name == "cuda") {
#ifdef GPTRAIN_HAVE_CUDA
    return make_cuda_backend(compute_dtype);
#else
    fail("this build has no CUDA backend (built with GPTRAIN_CUDA=OFF or without a CUDA toolkit)");
#endif
  }
  fail("unknown backend '{}': expected 'cpu' or 'cuda'", name);
}

}  // namespace gptrain
