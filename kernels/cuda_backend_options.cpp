// --attention-backend values (shared by CUDA and CPU-only builds, so the flag parses the same everywhere).
#include "core/common/error.h"
#include "kernels/cuda_backend.h"

namespace gptrain {

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

}  // namespace gptrain
