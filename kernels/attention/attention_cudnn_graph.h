// Building blocks of the cuDNN 9 backend-API graphs behind CudnnAttention (attention_cudnn.h): an owning
// wrapper per backend descriptor, the Plan that keeps every descriptor of one graph alive next to its
// execution plan, and one helper per operation kind (tensor, matmul, pointwise, reduction, reshape).
// The forward graph is built in attention_cudnn_cuda.cpp, the backward graph in
// attention_cudnn_backward_cuda.cpp; both follow the operation pattern cuDNN's fused flash-attention
// engines recognise (the same pattern NVIDIA's cudnn-frontend emits for its SDPA nodes), since the C
// backend API has no single "SDPA" operation usable with a causal mask before cuDNN 9.21.
// Only included from *_cuda.cpp files (needs cudnn.h).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/attention/attention_cudnn.h"

namespace gptrain::cuda {

// One backend descriptor, destroyed with its owner.
struct CudnnDesc {
  cudnnBackendDescriptor_t d = nullptr;
  explicit CudnnDesc(cudnnBackendDescriptorType_t type);
  ~CudnnDesc();
  CudnnDesc(const CudnnDesc&) = delete;
  CudnnDesc& operator=(const CudnnDesc&) = delete;
};

void cudnn_set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
               int64_t count, const void* value);

// Alignment (bytes) every graph tensor declares; CudnnAttention checks the pointers before executing.
constexpr int64_t kCudnnAlign = 16;

// Tensor UIDs of the variant packs (forward and backward share the names of their common tensors).
enum CudnnUid : int64_t {
  kUidQ = 1,
  kUidK,
  kUidV,
  kUidO,
  kUidStats,
  kUidScale,
  kUidNegInf,
  kUidDO,
  kUidDQ,
  kUidDK,
  kUidDV,
  kUidOne,
  kUidSoftmaxSum,  // backward: rowsum(dO * O), fp32 scratch in the workspace
  kUidDQAccum,     // backward: fp32 dQ accumulator in the workspace (non-deterministic engines)
  kUidVirtual = 100,
};

// The value masked scores are set to: cuDNN before 9.10 wants the lowest finite float there,
// later versions -inf (what cudnn-frontend passes for each version).
float cudnn_mask_value(std::size_t cudnn_version);

struct CudnnAttention::Plan {
  std::vector<std::unique_ptr<CudnnDesc>> keep;  // every descriptor the plan was built from
  cudnnBackendDescriptor_t plan = nullptr;       // owned by `keep`
  int64_t workspace = 0;                         // bytes the execution plan asks for
  bool ok = false;
  std::string error;
  // Backward only: whether the graph accumulates dQ in fp32 scratch (kUidDQAccum) first.
  bool dq_accum = false;

  CudnnDesc& make(cudnnBackendDescriptorType_t type);

  // A tensor; dims/strides in (B, H, S, D) order. Virtual tensors never touch memory.
  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t type, std::vector<int64_t> dims,
                                  std::vector<int64_t> strides, bool is_virtual, bool by_value = false);
  // c = a @ b (batched over the first two dims; b may have fewer heads than a: GQA), fp32 compute.
  cudnnBackendDescriptor_t matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c);
  // y = mode(x [, b] [, t]); axis >= 0 for GEN_INDEX; prec is the compute type (fp32 unless a comparison).
  cudnnBackendDescriptor_t pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                     cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t t = nullptr,
                                     int64_t axis = -1, cudnnDataType_t prec = CUDNN_DATA_FLOAT);
  // y = reduce(x) over the dims where y is smaller, fp32 compute.
  cudnnBackendDescriptor_t reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x,
                                     cudnnBackendDescriptor_t y);
  // y = x viewed with y's dims/strides (a transpose when the strides are swapped).
  cudnnBackendDescriptor_t reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y);

  // The causal mask of the SDPA pattern: y = (row >= col) ? x : neg_inf.
  cudnnBackendDescriptor_t causal_mask(std::vector<cudnnBackendDescriptor_t>& ops, cudnnBackendDescriptor_t x,
                                       cudnnBackendDescriptor_t neg_inf, int64_t& uid, const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& strides);

  // Finalizes the operation graph and the first execution plan a heuristic offers (mode A, then the
  // fallback list). With `deterministic`, engines carrying the NONDETERMINISTIC numerical note are
  // skipped. Sets ok/plan/workspace, or ok = false and `error`.
  void finalize(cudnnHandle_t handle, const std::vector<cudnnBackendDescriptor_t>& ops, bool deterministic);
};

// The graphs (attention_cudnn_cuda.cpp, attention_cudnn_backward_cuda.cpp). A failure leaves p.ok false
// with p.error set; they never throw for a graph cuDNN rejects.
void build_cudnn_attention_forward(CudnnAttention::Plan& p, cudnnHandle_t handle, std::size_t cudnn_version, DType t,
                                   int B, int T, int NH, int NKV, int HS);
void build_cudnn_attention_backward(CudnnAttention::Plan& p, cudnnHandle_t handle, std::size_t cudnn_version, DType t,
                                    int B, int T, int NH, int NKV, int HS, bool deterministic);

}  // namespace gptrain::cuda
