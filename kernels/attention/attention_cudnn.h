// cuDNN fused attention forward (cuDNN 9's fused flash-attention engines, reached through the backend
// graph API with the scaled-dot-product pattern: Q K^T, scale, causal mask, softmax with logsumexp
// statistics, P V): the fast path of CudaBackend's attention forward for bf16/fp16 without attention
// dropout or segment masks (cuDNN's dropout RNG and masks differ from the contract of
// kernels/backend.h; those cases run the flash kernels in attention.cu). The saved logsumexp has the
// contract's meaning, so the backward runs gptrain's flash backward on cuDNN's outputs.
// One execution plan per shape, built on first use and cached; a shape cuDNN rejects is remembered.
// Status: compiled for sm_80/sm_90, not yet run on a GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kernels/backend.h"
#include "kernels/cuda/workspace.h"
#include "kernels/cuda_device_check.h"

namespace gptrain::cuda {

class CudnnAttention {
 public:
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // Whether the cuDNN path can run this case; when not, *why says which condition failed.
  static bool supports(const CudaDeviceInfo& dev, DType t, int T, int NH, int NKV, int HS, bool segments,
                       float dropout_p, std::string* why);

  // Backend::attention_forward with dropout 0 and no segments. Returns false (work not enqueued,
  // *why set) when cuDNN finds no engine for this graph; the caller then uses the flash kernels.
  bool forward(cudaStream_t s, DType t, void* out, float* lse, const void* qkv, int B, int T, int NH, int NKV,
               int HS, std::string* why);

  struct Plan;  // an execution plan and the descriptors it was built from (attention_cudnn_cuda.cpp)

 private:
  using Key = std::tuple<int, int, int, int, int, int>;  // dtype, B, T, NH, NKV, HS
  Plan& plan_for(DType t, int B, int T, int NH, int NKV, int HS);

  void* handle_ = nullptr;  // cudnnHandle_t
  std::map<Key, std::unique_ptr<Plan>> plans_;
  Workspace ws_;
};

}  // namespace gptrain::cuda
