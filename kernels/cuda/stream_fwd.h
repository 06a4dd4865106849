// Forward declarations for the CUDA entry points declared in the op headers (kernels/<op>/<op>.h), so
// those headers stay plain C++ and compile without the CUDA toolkit: cudaStream_t exactly as CUDA's
// driver_types.h defines it (a redeclaration of the same type is allowed), and the backend's grow-only
// scratch buffer (kernels/cuda/workspace.h).
#pragma once

struct CUstream_st;
using cudaStream_t = CUstream_st*;

namespace gptrain::cuda {
class Workspace;
}  // namespace gptrain::cuda
