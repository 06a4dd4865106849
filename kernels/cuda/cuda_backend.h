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
  bool fp8_gemm_accepts(const void* out, const void* a, const void* b, int M, int N, int K) const override;
  bool fp8_gemm_limited() const override { return true; }

  // Whether the linear+GELU ops of this shape take the cuBLASLt epilogue (true) or the GEMM followed
  // by the GELU kernel (false): tanh GELU, bf16/fp16 (fp32 is the exact-comparison mode), aux leading
  // dimension a multiple of 8, and cuBLASLt offering an algorithm (checked when the op runs).
  bool gelu_epilogue_eligible(int width, GeluKind kind) const;

 private:
  // The ops (kernels/ops.inc), defined in cuda_backend_cuda.cpp: each calls its kernel launcher, cuBLASLt
  // or the attention implementation --attention-backend picks.
#define GPTRAIN_OP(ret, name, params, args, ...) ret do_##name params override;
#include "kernels/ops.inc"

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
