// What cuDNN fused attention (attention_cudnn.h) can run and the scratch it asks for, as far as the shape
// alone decides: plain C++, so the memory plan (parallel/plan/backend_workspace.cpp) applies the rules
// CudnnAttention applies, without the CUDA toolkit. The device, the cuDNN version and the engines cuDNN
// offers decide the rest at run time (CudnnAttention::supports, supports_backward, the plan's workspace).
#pragma once

#include <cstddef>
#include <string>

#include "kernels/backend.h"
#include "kernels/cuda/workspace_size.h"

namespace gptrain::cuda {

// Whether cuDNN fused attention takes this shape; when not, *why (nullable) says which condition failed.
inline bool cudnn_attention_shape_supported(DType t, int T, int NH, int NKV, int HS, bool segments, float dropout_p,
                                            std::string* why) {
  auto no = [&](const char* reason) {
    if (why) *why = reason;
    return false;
  };
  if (t == DType::F32) return no("fp32 compute dtype (cuDNN fused attention is bf16/fp16 only)");
  if (dropout_p > 0.0f) return no("attention dropout > 0 (cuDNN's dropout RNG differs from gptrain's Philox mapping)");
  if (segments) return no("segment mask (--reset-attention-mask)");
  if (HS % 8 != 0 || HS > 128) return no("head size not a multiple of 8 up to 128");
  if (NKV <= 0 || NH % NKV != 0) return no("NH not a multiple of NKV");
  if (T <= 0) return no("empty sequence");
  return true;
}

// Whether the backward graph accumulates dQ in fp32 scratch across key tiles (atomics: faster, not
// bitwise reproducible); the deterministic graph writes dQ directly.
constexpr bool cudnn_attention_backward_accumulates_dq(bool deterministic) { return !deterministic; }

// The backward's Workspace request: [plan workspace | softmax_sum (B, NH, T) fp32 | dQ accumulator
// (B, NH, T, HS) fp32 when it accumulates]. plan_workspace is cuDNN's choice for the built plan.
constexpr std::size_t cudnn_attention_backward_scratch_bytes(std::size_t B, std::size_t T, std::size_t NH,
                                                             std::size_t HS, std::size_t plan_workspace,
                                                             bool dq_accum) {
  const std::size_t rows = B * NH * T;
  return carve_bytes<char>(plan_workspace) + carve_bytes<float>(rows) + (dq_accum ? carve_bytes<float>(rows * HS) : 0);
}

}  // namespace gptrain::cuda
