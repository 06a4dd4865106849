// The CUDA backend's public entry points (plain C++: includable without the CUDA toolkit).
// make_backend("cuda", dtype) (kernels/backend.h) calls make_cuda_backend; the training app applies
// --attention-backend and --deterministic through configure_cuda_backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "kernels/backend.h"

namespace gptrain {

std::unique_ptr<Backend> make_cuda_backend(DType compute_dtype);

// Which kernels run attention_forward/backward on CUDA (--attention-backend).
//   auto:  cuDNN fused attention when the cuDNN version and the shape support it, else flash
//   cudnn: cuDNN fused attention (graph API) forward and backward; a case the forward cannot run is an
//          error, a limit of the backward graph alone falls back to the flash backward (one info line)
//   flash: gptrain's own flash-attention kernels: tensor cores (attention_tc.cu) for bf16/fp16 with
//          head size 64 or 128, the FMA kernels (attention.cu) otherwise
//   flash-fma: always the own FMA kernels (debugging and comparison)
enum class AttentionBackend : uint8_t { Auto = 0, Cudnn = 1, Flash = 2, FlashFma = 3 };
// Parses "auto" | "cudnn" (or Megatron's "fused") | "flash" | "flash-fma"; throws gptrain::Error naming the
// accepted values otherwise.
AttentionBackend parse_attention_backend(const std::string& s);
const char* attention_backend_name(AttentionBackend a);

struct CudaBackendOptions {
  AttentionBackend attention = AttentionBackend::Auto;
  // Same bits run to run: no order-dependent reductions anywhere (GEMM split-K in place excluded,
  // cuDNN attention backward only from engines without the NONDETERMINISTIC note, else flash).
  bool deterministic = false;
};

// Applies options to a backend made by make_cuda_backend; throws if `b` is not the CUDA backend
// (or, in a build without CUDA, always).
void configure_cuda_backend(Backend& b, const CudaBackendOptions& options);

// The options the CUDA backend `b` runs with (the memory plan's workspace estimate reads them); throws
// like configure_cuda_backend when `b` is not the CUDA backend.
CudaBackendOptions cuda_backend_options(const Backend& b);

// Bytes of device scratch the CUDA backend `b` holds now: cuBLASLt's workspace, the capacity of its
// grow-only Workspace, and of cuDNN attention's Workspace (plan workspaces included). The GPU test
// compares them with the memory plan's estimate.
struct CudaScratchBytes {
  std::size_t gemm = 0, scratch = 0, attention = 0;
  std::size_t attention_plan_max = 0;  // the largest cuDNN plan workspace requested (inside `attention`)
};
CudaScratchBytes cuda_backend_scratch(const Backend& b);

}  // namespace gptrain
