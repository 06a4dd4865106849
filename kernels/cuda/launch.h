// Host-side launchers of the CUDA kernels, one per Backend op (see kernels/backend.h for the
// shapes and semantics). Each is defined in the op's .cu file beside its CPU twin and enqueues work
// on `stream` without synchronizing. `t` is the compute dtype of the act (void*) tensors.
// Status: compiled for sm_80/sm_90, not yet run on a GPU.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/workspace.h"

namespace gptrain::cuda {

// ---- elementwise (elementwise/elementwise.cu) ----
void convert(cudaStream_t s, void* dst, DType dst_t, const void* src, DType src_t, std::size_t n);
void add(cudaStream_t s, DType t, void* out, const void* a, const void* b, std::size_t n);
void scale_f32(cudaStream_t s, float* x, float scale, std::size_t n);
// Sum of squares in fp64, two fixed-order passes (deterministic); synchronizes to return the value.
double sum_squares(cudaStream_t s, Workspace& ws, const float* x, std::size_t n);

// ---- embedding (embedding/embedding.cu) ----
void embedding_forward(cudaStream_t s, DType t, void* out, const int32_t* tokens, const int32_t* positions,
                       const void* wte, const void* wpe, int N, int C, int vocab_start, int V_local);
// Deterministic: rows are stably sorted by token (CUB radix sort), then each distinct token's rows are
// summed in row order by one block.
void embedding_backward(cudaStream_t s, DType t, Workspace& ws, float* dwte, float* dwpe, const void* dout,
                        const int32_t* tokens, const int32_t* positions, int N, int C, int vocab_start,
                        int V_local);

// ---- normalization (layernorm/layernorm.cu) ----
void layernorm_forward(cudaStream_t s, DType t, void* out, float* mean, float* rstd, const void* inp,
                       const void* weight, const void* bias, int N, int C, float eps);
void layernorm_backward(cudaStream_t s, DType t, Workspace& ws, void* dinp_acc, float* dweight, float* dbias,
                        const void* dout, const void* inp, const void* weight, const float* mean,
                        const float* rstd, int N, int C);
void rmsnorm_forward(cudaStream_t s, DType t, void* out, float* rstd, const void* inp, const void* weight, int N,
                     int C, float eps);
void rmsnorm_backward(cudaStream_t s, DType t, Workspace& ws, void* dinp_acc, float* dweight, const void* dout,
                      const void* inp, const void* weight, const float* rstd, int N, int C);
// residual_out = a + b and its norm in one kernel (same bits as add + the plain forward).
void residual_layernorm_forward(cudaStream_t s, DType t, void* residual_out, void* norm_out, float* mean,
                                float* rstd, const void* a, const void* b, const void* weight, const void* bias, int N,
                                int C, float eps);
void residual_rmsnorm_forward(cudaStream_t s, DType t, void* residual_out, void* norm_out, float* rstd, const void* a,
                              const void* b, const void* weight, int N, int C, float eps);

// ---- matmul helpers (matmul/matmul.cu); the GEMMs themselves are cuBLASLt (matmul_cublaslt_cuda.cpp) ----
// dbias (OC) += column sums of dout (N, OC), fixed-order two-pass reduction.
void bias_grad(cudaStream_t s, DType t, Workspace& ws, float* dbias, const void* dout, int N, int OC);

// ---- activations (gelu/gelu.cu) ----
void gelu_forward(cudaStream_t s, DType t, void* out, const void* inp, std::size_t n, GeluKind kind);
void gelu_backward(cudaStream_t s, DType t, void* dinp, const void* inp, const void* dout, std::size_t n,
                   GeluKind kind);
void swiglu_forward(cudaStream_t s, DType t, void* out, const void* inp, int N, int F);
void swiglu_backward(cudaStream_t s, DType t, void* dinp, const void* inp, const void* dout, int N, int F);

// ---- dropout (dropout/dropout.cu) ----
void dropout_forward(cudaStream_t s, DType t, void* out, const void* inp, std::size_t n, float p, uint64_t seed,
                     uint64_t offset);
void dropout_backward(cudaStream_t s, DType t, void* dinp, const void* dout, std::size_t n, float p,
                      uint64_t seed, uint64_t offset);

// ---- rotary embedding (rope/rope.cu) ----
void rope(cudaStream_t s, DType t, void* qkv, const int32_t* positions, int N, int NH, int NKV, int HS,
          int rotary_dim, float base, bool interleaved, bool inverse);

// ---- attention: own flash-attention kernels (attention/attention.cu) ----
void flash_attention_forward(cudaStream_t s, DType t, void* out, float* lse, const void* qkv,
                             const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                             uint64_t seed, uint64_t offset);
void flash_attention_backward(cudaStream_t s, DType t, Workspace& ws, void* dqkv, const void* dout,
                              const void* qkv, const void* out, const float* lse, const int32_t* segment_ids,
                              int B, int T, int NH, int NKV, int HS, float dropout_p, uint64_t seed,
                              uint64_t offset);
// Largest head size the flash kernels take.
constexpr int kFlashMaxHeadSize = 128;

// ---- cross-entropy (xent/xent.cu) ----
void xent_stats(cudaStream_t s, DType t, XentStats stats, const void* logits, const int32_t* targets, int N,
                int V_local, int V_valid_local, int vocab_start);
void xent_backward(cudaStream_t s, DType t, void* dlogits, const void* logits, const int32_t* targets,
                   const float* row_max, const float* row_sumexp, const float* dloss, int N, int V_local,
                   int V_valid_local, int vocab_start);
void xent_loss(cudaStream_t s, float* losses, XentStats stats, int N);

// ---- optimizer (adamw/adamw.cu) ----
void adamw_update(cudaStream_t s, DType t, float* master, void* model_param, const float* grad, float* m,
                  float* v, std::size_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                  int step, float grad_scale);

}  // namespace gptrain::cuda
