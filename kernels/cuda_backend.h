// The CUDA backend's factory, defined by the CUDA twins (kernels/*.cu); only compiled and called when
// the build has GPTRAIN_HAVE_CUDA. make_backend("cuda", dtype) forwards here.
#pragma once

#include <memory>

#include "kernels/backend.h"

namespace gptrain {

std::unique_ptr<Backend> make_cuda_backend(DType compute_dtype);

}  // namespace gptrain
