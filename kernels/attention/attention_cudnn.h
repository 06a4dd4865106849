// cuDNN fused attention (cuDNN 9's fused flash-attention engines, reached through the backend graph
// API with the scaled-dot-product pattern): the fast path of CudaBackend's attention forward and
// backward for bf16/fp16 without attention dropout or segment masks (cuDNN's dropout RNG and masks
// differ from the contract of kernels/backend.h; those cases, and fp32, run the flash kernels in
// attention.cu). GQA (NKV < NH) is part of both graphs.
// The saved statistics agree: cuDNN's softmax "Stats" is the natural-log logsumexp of the scaled
// scores, (B, NH, T, 1) fp32, which is exactly kernels/backend.h's lse (B, NH, T). So either backward
// (cuDNN or flash) runs on either forward's output, and a backward case cuDNN cannot take (see
// supports_backward, or no engine for the shape) falls back to the flash backward.
// One execution plan per (direction, dtype, shape, determinism), built on first use and cached; a
// shape cuDNN rejects is remembered. Workspace (plan workspace + backward scratch) comes from one
// grow-only Workspace.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "kernels/attention/attention_cudnn_shape.h"
#include "kernels/backend.h"
#include "kernels/cuda/workspace.h"
#include "kernels/cuda/device_check.h"

namespace gptrain::cuda {

class CudnnAttention {
 public:
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  // Whether the cuDNN path can run this case; when not, *why says which condition failed. The device and
  // cuDNN version checks, then cudnn_attention_shape_supported (attention_cudnn_shape.h).
  static bool supports(const CudaDeviceInfo& dev, DType t, int T, int NH, int NKV, int HS, bool segments,
                       float dropout_p, std::string* why);
  // supports() plus the backward graph's own limits (T = 1; T not a multiple of 128 on cuDNN <= 9.15.0,
  // which needs a padding-mask workaround not built here).
  static bool supports_backward(const CudaDeviceInfo& dev, DType t, int T, int NH, int NKV, int HS, bool segments,
                                float dropout_p, std::string* why);

  // Backend::attention_forward with dropout 0 and no segments. Returns false (work not enqueued,
  // *why set) when cuDNN finds no engine for this graph; the caller then uses the flash kernels.
  bool forward(cudaStream_t s, DType t, void* out, float* lse, const void* qkv, int B, int T, int NH, int NKV, int HS,
               std::string* why);
  // Backend::attention_backward with dropout 0 and no segments: dqkv (B, T, (NH + 2 NKV) HS) is
  // overwritten through strided views (no copies). With `deterministic`, only engines without cuDNN's
  // NONDETERMINISTIC note are used (and dQ is not accumulated with atomics). Returns false (work not
  // enqueued, *why set) when no engine fits; the caller then runs the flash backward.
  bool backward(cudaStream_t s, DType t, void* dqkv, const void* dout, const void* qkv, const void* out,
                const float* lse, int B, int T, int NH, int NKV, int HS, bool deterministic, std::string* why);

  // Logs `message` (info) the first time this object sees it: fallback notices, once per run.
  void note_once(const std::string& message);

  // Capacity of the Workspace (plan workspaces and backward scratch), and the largest plan workspace
  // an executed plan asked for: the memory plan estimates the first without the second.
  std::size_t workspace_capacity() const { return ws_.capacity(); }
  std::size_t max_plan_workspace() const { return max_plan_workspace_; }

  struct Plan;  // an execution plan and the descriptors it was built from (attention_cudnn_graph.h)

 private:
  enum Direction : int { kForward = 0, kBackward = 1 };
  using Key = std::tuple<int, int, int, int, int, int, int, int>;  // direction, dtype, B, T, NH, NKV, HS, det
  Plan& plan_for(Direction dir, DType t, int B, int T, int NH, int NKV, int HS, bool deterministic);

  void* handle_ = nullptr;   // cudnnHandle_t
  std::size_t version_ = 0;  // cudnnGetVersion() of the loaded library
  std::map<Key, std::unique_ptr<Plan>> plans_;
  std::set<std::string> noted_;
  Workspace ws_;
  std::size_t max_plan_workspace_ = 0;
};

}  // namespace gptrain::cuda
