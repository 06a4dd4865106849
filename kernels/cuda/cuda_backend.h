// CudaBackend: the Backend ops on one GPU (BackendOptions::device) and one CUDA stream. Act tensors are
// in the compute dtype (fp32, bf16, fp16), float* tensors fp32, as kernels/backend.h says. GEMMs go to
// cuBLASLt, attention to cuDNN's fused kernels or gptrain's flash kernels, everything else to the
// kernels in kernels/<op>/*.cu. make_backend("cuda", ...) builds it; the CUDA-only getters below are for
// the GPU tests and the NCCL communicator (which runs on stream()).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>

#include "kernels/backend.h"
#include "kernels/cuda/device_check.h"
#include "kernels/cuda/workspace.h"
#include "kernels/matmul/matmul_cublaslt.h"

namespace gptrain::cuda {

class CudnnAttention;

class CudaBackend final : public Backend {
 public:
  // Opens GPU options.device (check_cuda_device: throws with an actionable message when it cannot run).
  CudaBackend(DType compute_dtype, const BackendOptions& options);
  ~CudaBackend() override;

  // Change the options of a live backend (the GPU tests compare attention paths on one backend).
  void set_attention_backend(AttentionBackend a) { mutable_options().attention = a; }
  AttentionBackend attention_backend() const { return options().attention; }
  void set_deterministic(bool on);
  bool deterministic() const { return options().deterministic; }
  const CudaDeviceInfo& device_info() const { return info_; }
  cudaStream_t stream() const { return stream_; }
  // Which implementation attention_forward would use for this shape ("cudnn" or "flash").
  const char* attention_impl_for(int T, int NH, int NKV, int HS, bool segments, float dropout_p) const;

  const char* name() const override { return "cuda"; }
  DType compute_dtype() const override { return dtype_; }
  std::optional<DeviceMemory> device_memory() const override;  // cudaMemGetInfo on this backend's GPU
  BackendScratch scratch_bytes() const override;

  void* alloc(std::size_t bytes) override;
  void release(void* p) override;
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void fill_zero(void* p, std::size_t bytes) override;
  void synchronize() override;
  void convert(void* dst, DType dst_t, const void* src, DType src_t, std::size_t n) override;

  // Whether the linear+GELU ops of this shape take the cuBLASLt epilogue (true) or the GEMM followed
  // by the GELU kernel (false): tanh GELU, bf16/fp16 (fp32 is the exact-comparison mode), aux leading
  // dimension a multiple of 8, and cuBLASLt offering an algorithm (checked when the op runs).
  bool gelu_epilogue_eligible(int width, GeluKind kind) const;

 private:
  void do_embedding_forward(void* out, const int32_t* tokens, const int32_t* positions, const void* wte,
                            const void* wpe, int N, int C, int vocab_start, int V_local) override;
  void do_embedding_backward(float* dwte, float* dwpe, const void* dout, const int32_t* tokens,
                             const int32_t* positions, int N, int C, int vocab_start, int V_local) override;
  void do_layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight, const void* bias,
                            int N, int C, float eps, bool zero_centered_gamma) override;
  void do_layernorm_backward(void* dinp_acc, float* dweight, float* dbias, const void* dout, const void* inp,
                             const void* weight, const float* mean, const float* rstd, int N, int C,
                             bool zero_centered_gamma) override;
  void do_rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C, float eps,
                          bool zero_centered_gamma) override;
  void do_rmsnorm_backward(void* dinp_acc, float* dweight, const void* dout, const void* inp, const void* weight,
                           const float* rstd, int N, int C, bool zero_centered_gamma) override;
  void do_residual_layernorm_forward(void* residual_out, void* norm_out, float* mean, float* rstd, const void* a,
                                     const void* b, const void* weight, const void* bias, int N, int C, float eps,
                                     bool zero_centered_gamma) override;
  void do_residual_rmsnorm_forward(void* residual_out, void* norm_out, float* rstd, const void* a, const void* b,
                                   const void* weight, int N, int C, float eps, bool zero_centered_gamma) override;
  void do_matmul_forward(void* out, const void* inp, const void* weight, const void* bias, int N, int IC,
                         int OC) override;
  void do_matmul_backward(void* dinp, float* dweight, float* dbias, const void* dout, const void* inp,
                          const void* weight, int N, int IC, int OC, bool accumulate_dinp) override;
  void do_matmul_bias_gelu_forward(void* out, void* pre_gelu, const void* inp, const void* weight, const void* bias,
                                   int N, int IC, int OC, GeluKind kind) override;
  void do_matmul_dgelu_backward(void* dpre, float* dweight, float* dbias, const void* dout, const void* inp,
                                const void* pre_gelu, const void* weight, int N, int IC, int OC,
                                GeluKind kind) override;
  void do_gelu_forward(void* out, const void* inp, std::size_t n, GeluKind kind) override;
  void do_gelu_backward(void* dinp, const void* inp, const void* dout, std::size_t n, GeluKind kind) override;
  void do_swiglu_forward(void* out, const void* inp, int N, int F) override;
  void do_swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F) override;
  void do_add(void* out, const void* a, const void* b, std::size_t n) override;
  void do_add_inplace(void* dst, const void* src, std::size_t n) override;
  void do_scale_inplace(float* x, float s, std::size_t n) override;
  void do_dropout_forward(void* out, const void* inp, std::size_t n, float p, uint64_t seed, uint64_t offset) override;
  void do_dropout_backward(void* dinp, const void* dout, std::size_t n, float p, uint64_t seed,
                           uint64_t offset) override;
  void do_rope(void* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim, float base,
               bool interleaved, bool inverse) override;
  void do_attention_forward(void* out, float* lse, const void* qkv, const int32_t* segment_ids, int B, int T, int NH,
                            int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset) override;
  void do_attention_backward(void* dqkv, const void* dout, const void* qkv, const void* out, const float* lse,
                             const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                             uint64_t seed, uint64_t offset) override;
  void do_xent_stats(XentStats stats, const void* logits, const int32_t* targets, int N, int V_local, int V_valid_local,
                     int vocab_start) override;
  void do_xent_backward(void* dlogits, const void* logits, const int32_t* targets, const float* row_max,
                        const float* row_sumexp, const float* dloss, int N, int V_local, int V_valid_local,
                        int vocab_start) override;
  void do_xent_loss(float* losses, XentStats stats, int N) override;
  void do_moe_router_forward(float* probs, int32_t* experts, float* scores, const float* logits, int N, int E, int K,
                             MoeScore score, bool pre_softmax) override;
  void do_moe_sinkhorn_router_forward(float* probs, int32_t* experts, float* normed, const float* logits, int N, int E,
                                      int K, bool train) override;
  void do_moe_router_backward(float* dlogits, const float* dprobs, const float* dscores, const float* logits,
                              const int32_t* experts, int N, int E, int K, MoeScore score, bool pre_softmax) override;
  void do_moe_dispatch_plan(int32_t* dest_row, int32_t* segment_rows, const int32_t* experts, const float* probs, int N,
                            int E, int K, int capacity, MoeDropPolicy policy, bool pad_to_capacity) override;
  void do_moe_permute(void* out, const void* inp, const int32_t* dest_row, int N, int K, int C, int R) override;
  void do_moe_permute_backward(void* dinp, const void* dout, const int32_t* dest_row, int N, int K, int C) override;
  void do_moe_unpermute(void* out, const void* inp, const float* probs, const int32_t* dest_row, int N, int K,
                        int C) override;
  void do_moe_unpermute_backward(void* dinp, float* dprobs, const void* dout, const void* inp, const float* probs,
                                 const int32_t* dest_row, int N, int K, int C, int R) override;
  void do_moe_grouped_matmul_forward(void* out, const void* inp, const void* weight, const int32_t* chunk_rows, int E,
                                     int chunks, int IC, int OC) override;
  void do_moe_grouped_matmul_backward(void* dinp, float* dweight, const void* dout, const void* inp, const void* weight,
                                      const int32_t* chunk_rows, int E, int chunks, int IC, int OC) override;
  void do_moe_load_balancing_loss(float* loss, const float* scores, const int32_t* experts, int N, int E, int K,
                                  int seqs, float coeff) override;
  void do_moe_load_balancing_loss_backward(float* dscores, const int32_t* experts, int N, int E, int K, int seqs,
                                           float coeff_times_dloss) override;
  void do_moe_z_loss(float* loss, const float* logits, int N, int E, float coeff) override;
  void do_moe_z_loss_backward(float* dlogits_acc, const float* logits, int N, int E, float coeff_times_dloss) override;
  void do_adamw_update(float* master, void* model_param, const float* grad, float* m, float* v, std::size_t n, float lr,
                       float beta1, float beta2, float eps, float weight_decay, int step, float grad_scale) override;
  double do_sum_squares(const float* x, std::size_t n) override;

  bool use_cudnn_attention(int T, int NH, int NKV, int HS, bool segments, float dropout_p) const;
  GemmArgs linear_forward_args(void* out, const void* inp, const void* weight, const void* bias, int N, int IC,
                               int OC) const;
  GemmArgs linear_dinp_args(void* dinp, const void* dout, const void* weight, int N, int IC, int OC,
                            bool accumulate) const;
  void linear_dweight(float* dweight, float* dbias, const void* dout, const void* inp, int N, int IC, int OC);

  DType dtype_;
  CudaDeviceInfo info_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<LtGemm> gemm_;
  std::unique_ptr<CudnnAttention> cudnn_attention_;
  Workspace ws_;
};

}  // namespace gptrain::cuda
