// The backend-neutral part of kernels/backend.h: dtype helpers, --attention-backend values (the same in
// CUDA and CPU-only builds, so the flag parses the same everywhere) and make_backend, the one place that
// maps a backend name, compute dtype and options to an implementation.
#include "kernels/backend.h"

#include "core/common/error.h"

namespace gptrain {

// kernels/cpu/cpu_backend.cpp; kernels/cuda/cuda_backend_cuda.cpp (cuda_backend_nocuda.cpp without CUDA).
std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);
std::unique_ptr<Backend> make_cuda_backend(DType compute_dtype, const BackendOptions& options);

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::BF16: return 2;
    case DType::F16: return 2;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::BF16: return "bf16";
    case DType::F16: return "fp16";
  }
  return "?";
}

AttentionBackend parse_attention_backend(const std::string& s) {
  if (s == "auto") return AttentionBackend::Auto;
  if (s == "cudnn" || s == "fused") return AttentionBackend::Cudnn;  // "fused": Megatron's name for cuDNN's
  if (s == "flash") return AttentionBackend::Flash;
  if (s == "flash-fma") return AttentionBackend::FlashFma;
  fail("--attention-backend: got '{}', expected one of auto, cudnn (alias fused), flash, flash-fma", s);
}

const char* attention_backend_name(AttentionBackend a) {
  switch (a) {
    case AttentionBackend::Auto: return "auto";
    case AttentionBackend::Cudnn: return "cudnn";
    case AttentionBackend::Flash: return "flash";
    case AttentionBackend::FlashFma: return "flash-fma";
  }
  return "?";
}

std::unique_ptr<Backend> make_backend(const std::string& name, DType compute_dtype, const BackendOptions& options) {
  if (name == "cpu") {
    check(compute_dtype == DType::F32,
          "the cpu backend computes in fp32 only, {} was requested (drop --bf16/--fp16 or use the cuda backend)",
          dtype_name(compute_dtype));
    check(options.attention == AttentionBackend::Auto,
          "--attention-backend {}: the cpu backend has one attention implementation; use --attention-backend auto "
          "(or --device cuda)",
          attention_backend_name(options.attention));
    return make_cpu_backend(options);
  }
  if (name == "cuda") return make_cuda_backend(compute_dtype, options);
  fail("unknown backend '{}': expected 'cpu' or 'cuda'", name);
}

}  // namespace gptrain
