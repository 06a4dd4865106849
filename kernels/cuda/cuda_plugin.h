// What libgptrain_cuda.so (every *.cu and *_cuda.cpp of kernels/ and core/) exports to the CPU side,
// which loads it on first use (core/common/plugin.h, cuda_plugin.cpp). Raw pointers: the caller owns
// the object.
#pragma once

#include "kernels/backend.h"
#include "kernels/offload/offload_stream.h"

extern "C" {
// The CUDA backend on GPU options->device (kernels/backend.h's make_backend("cuda", ...)).
gptrain::Backend* gptrain_cuda_make_backend(gptrain::DType compute_dtype, const gptrain::BackendOptions* options);
// GPUs visible to this process.
int gptrain_cuda_device_count();
// Copies on a CUDA stream of their own (kernels/offload/offload_stream.h).
gptrain::OffloadStream* gptrain_cuda_make_offload_stream(gptrain::Backend* be, int slots);
}

namespace gptrain {

// The library's name for plugin::symbol.
inline constexpr const char* kCudaPlugin = "gptrain_cuda";

}  // namespace gptrain
