// CudaBackend: forwards each Backend op to its kernel launcher (declared in the op's header,
// kernels/<op>/<op>.h), to cuBLASLt (matmul) or to the attention implementation chosen by
// --attention-backend.
#include "kernels/cuda/cuda_backend.h"

#include <fmt/format.h>

#include "core/common/error.h"
#include "core/common/log.h"
#include "kernels/adamw/adamw.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/attention_block.h"
#include "kernels/attention/attention_cudnn.h"
#include "kernels/cuda/check.h"
#include "kernels/cuda/cuda_plugin.h"
#include "kernels/dropout/dropout.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/embedding/embedding.h"
#include "kernels/fp8/fp8.h"
#include "kernels/gelu/gelu.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/lion/lion.h"
#include "kernels/matmul/matmul.h"
#include "kernels/moe/moe.h"
#include "kernels/muon/muon.h"
#include "kernels/qk_norm/qk_norm.h"
#include "kernels/rope/rope.h"
#include "kernels/sgd/sgd.h"
#include "kernels/squared_relu/squared_relu.h"
#include "kernels/xent/xent.h"

namespace gptrain {

namespace cuda {

namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::F32: return CUDA_R_32F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F16: return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

}  // namespace

CudaBackend::CudaBackend(DType compute_dtype, const BackendOptions& options) : Backend(options), dtype_(compute_dtype) {
  info_ = check_cuda_device(options.device);
  GPTRAIN_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  gemm_ = std::make_unique<LtGemm>();
  gemm_->set_deterministic(options.deterministic);
  if (info_.cudnn_attention_ok) cudnn_attention_ = std::make_unique<CudnnAttention>();
  log::info("cuda backend: {}, compute dtype {}", describe(info_), dtype_name(dtype_));
}

std::optional<DeviceMemory> CudaBackend::device_memory() const {
  // The query reports the calling thread's current device: make it this backend's for the call.
  int current = 0;
  GPTRAIN_CUDA_CHECK(cudaGetDevice(&current));
  if (current != info_.device) GPTRAIN_CUDA_CHECK(cudaSetDevice(info_.device));
  DeviceMemory m;
  const cudaError_t e = cudaMemGetInfo(&m.free, &m.total);
  if (current != info_.device) GPTRAIN_CUDA_CHECK(cudaSetDevice(current));
  if (e != cudaSuccess) fail("cudaMemGetInfo on GPU {} failed: {}", info_.device, cudaGetErrorString(e));
  return m;
}

BackendScratch CudaBackend::scratch_bytes() const {
  BackendScratch b;
  b.gemm = gemm_->workspace_bytes();
  b.scratch = ws_.capacity();
  if (cudnn_attention_) {
    b.attention = cudnn_attention_->workspace_capacity();
    b.attention_plan_max = cudnn_attention_->max_plan_workspace();
  }
  return b;
}

CudaBackend::~CudaBackend() {
  if (stream_) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

void CudaBackend::set_deterministic(bool on) {
  mutable_options().deterministic = on;
  gemm_->set_deterministic(on);
}

// ---- memory ----

void* CudaBackend::alloc(std::size_t bytes) {
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, bytes == 0 ? 1 : bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    fail(
        "GPU out of memory: could not allocate {:.2f} GiB ({:.2f} GiB free of {:.2f} GiB): reduce "
        "--micro-batch-size or --seq-length, enable --recompute-activations, or use more GPUs (tensor/pipeline "
        "parallel)",
        bytes / double(1u << 30), free_b / double(1u << 30), total_b / double(1u << 30));
  }
  allocations().allocated(p, bytes);
  return p;
}

void CudaBackend::release(void* p) {
  allocations().released(p);
  if (p) GPTRAIN_CUDA_CHECK(cudaFree(p));
}

void CudaBackend::copy_to_device(void* dst, const void* host_src, std::size_t bytes) {
  // From pageable memory this returns once the source has been staged, so the caller may reuse it.
  GPTRAIN_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, std::size_t bytes) {
  GPTRAIN_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  GPTRAIN_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaBackend::copy(void* dst, const void* src, std::size_t bytes) {
  GPTRAIN_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

void CudaBackend::fill_zero(void* p, std::size_t bytes) { GPTRAIN_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_)); }

void CudaBackend::synchronize() { GPTRAIN_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

void CudaBackend::convert(void* dst, DType dst_t, const void* src, DType src_t, std::size_t n) {
  cuda::convert(stream_, dst, dst_t, src, src_t, n);
}

// ---- embedding, norms ----

void CudaBackend::do_embedding_forward(void* out, const int32_t* tokens, const int32_t* positions, const void* wte,
                                       const void* wpe, int N, int C, int vocab_start, int V_local, float scale) {
  cuda::embedding_forward(stream_, dtype_, out, tokens, positions, wte, wpe, N, C, vocab_start, V_local, scale);
}

void CudaBackend::do_embedding_backward(float* dwte, float* dwpe, const void* dout, const int32_t* tokens,
                                        const int32_t* positions, int N, int C, int vocab_start, int V_local,
                                        float scale) {
  cuda::embedding_backward(stream_, dtype_, ws_, dwte, dwpe, dout, tokens, positions, N, C, vocab_start, V_local,
                           scale);
}

void CudaBackend::do_layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight,
                                       const void* bias, int N, int C, float eps, bool zero_centered_gamma) {
  cuda::layernorm_forward(stream_, dtype_, out, mean, rstd, inp, weight, bias, N, C, eps, zero_centered_gamma);
}

void CudaBackend::do_layernorm_backward(void* dinp_acc, float* dweight, float* dbias, const void* dout, const void* inp,
                                        const void* weight, const float* mean, const float* rstd, int N, int C,
                                        bool zero_centered_gamma) {
  cuda::layernorm_backward(stream_, dtype_, ws_, dinp_acc, dweight, dbias, dout, inp, weight, mean, rstd, N, C,
                           zero_centered_gamma);
}

void CudaBackend::do_rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C,
                                     float eps, bool zero_centered_gamma) {
  cuda::rmsnorm_forward(stream_, dtype_, out, rstd, inp, weight, N, C, eps, zero_centered_gamma);
}

void CudaBackend::do_residual_layernorm_forward(void* residual_out, void* norm_out, float* mean, float* rstd,
                                                const void* a, const void* b, const void* weight, const void* bias,
                                                int N, int C, float eps, bool zero_centered_gamma) {
  cuda::residual_layernorm_forward(stream_, dtype_, residual_out, norm_out, mean, rstd, a, b, weight, bias, N, C, eps,
                                   zero_centered_gamma);
}

void CudaBackend::do_residual_rmsnorm_forward(void* residual_out, void* norm_out, float* rstd, const void* a,
                                              const void* b, const void* weight, int N, int C, float eps,
                                              bool zero_centered_gamma) {
  cuda::residual_rmsnorm_forward(stream_, dtype_, residual_out, norm_out, rstd, a, b, weight, N, C, eps,
                                 zero_centered_gamma);
}

void CudaBackend::do_rmsnorm_backward(void* dinp_acc, float* dweight, const void* dout, const void* inp,
                                      const void* weight, const float* rstd, int N, int C, bool zero_centered_gamma) {
  cuda::rmsnorm_backward(stream_, dtype_, ws_, dinp_acc, dweight, dout, inp, weight, rstd, N, C, zero_centered_gamma);
}

// ---- matmul: row-major (N, C) tensors are column-major (C, N) matrices to cuBLASLt ----

GemmArgs CudaBackend::linear_forward_args(void* out, const void* inp, const void* weight, const void* bias, int N,
                                          int IC, int OC) const {
  // out^T (OC, N) = W (OC, IC) . inp^T (IC, N): A = W stored (IC, OC) col-major, transposed.
  GemmArgs g;
  g.transa = true;
  g.m = OC, g.n = N, g.k = IC;
  g.A = weight, g.a_type = cuda_type(dtype_), g.lda = IC;
  g.B = inp, g.b_type = cuda_type(dtype_), g.ldb = IC;
  g.D = out, g.d_type = cuda_type(dtype_), g.ldd = OC;
  g.bias = bias;
  return g;
}

GemmArgs CudaBackend::linear_dinp_args(void* dinp, const void* dout, const void* weight, int N, int IC, int OC,
                                       bool accumulate) const {
  // dinp^T (IC, N) = W^T (IC, OC) . dout^T (OC, N)
  GemmArgs g;
  g.m = IC, g.n = N, g.k = OC;
  g.A = weight, g.a_type = cuda_type(dtype_), g.lda = IC;
  g.B = dout, g.b_type = cuda_type(dtype_), g.ldb = OC;
  g.D = dinp, g.d_type = cuda_type(dtype_), g.ldd = IC;
  g.beta = accumulate ? 1.0f : 0.0f;
  return g;
}

void CudaBackend::linear_dweight(float* dweight, float* dbias, const void* dout, const void* inp, int N, int IC,
                                 int OC) {
  if (dweight) {
    // dW^T (IC, OC) += inp^T (IC, N) . dout (N, OC); fp32 C/D from bf16/fp16 A/B (Megatron's main grads).
    GemmArgs g;
    g.transb = true;
    g.m = IC, g.n = OC, g.k = N;
    g.A = inp, g.a_type = cuda_type(dtype_), g.lda = IC;
    g.B = dout, g.b_type = cuda_type(dtype_), g.ldb = OC;
    g.D = dweight, g.d_type = CUDA_R_32F, g.ldd = IC;
    g.beta = 1.0f;
    gemm_->run(stream_, g);
  }
  if (dbias) cuda::bias_grad(stream_, dtype_, ws_, dbias, dout, N, OC);
}

void CudaBackend::do_matmul_forward(void* out, const void* inp, const void* weight, const void* bias, int N, int IC,
                                    int OC) {
  gemm_->run(stream_, linear_forward_args(out, inp, weight, bias, N, IC, OC));
}

void CudaBackend::do_matmul_backward(void* dinp, float* dweight, float* dbias, const void* dout, const void* inp,
                                     const void* weight, int N, int IC, int OC, bool accumulate_dinp) {
  if (dinp) gemm_->run(stream_, linear_dinp_args(dinp, dout, weight, N, IC, OC, accumulate_dinp));
  linear_dweight(dweight, dbias, dout, inp, N, IC, OC);
}

// ---- linear + GELU: cuBLASLt epilogues where they apply, else the GEMM and the GELU kernel ----

bool CudaBackend::gelu_epilogue_eligible(int width, GeluKind kind) const {
  return kind == GeluKind::Tanh && dtype_ != DType::F32 && width % 8 == 0;
}

void CudaBackend::do_matmul_bias_gelu_forward(void* out, void* pre_gelu, const void* inp, const void* weight,
                                              const void* bias, int N, int IC, int OC, GeluKind kind) {
  if (gelu_epilogue_eligible(OC, kind)) {
    // aux (OC, N) col-major = pre_gelu (N, OC) row-major, the same layout as D.
    GemmArgs g = linear_forward_args(out, inp, weight, bias, N, IC, OC);
    g.epilogue = GemmEpilogue::GeluAux;
    g.aux = pre_gelu, g.aux_ld = OC;
    if (gemm_->try_run(stream_, g)) return;
  }
  do_matmul_forward(pre_gelu, inp, weight, bias, N, IC, OC);
  cuda::gelu_forward(stream_, dtype_, out, pre_gelu, std::size_t(N) * OC, kind);
}

void CudaBackend::do_matmul_dgelu_backward(void* dpre, float* dweight, float* dbias, const void* dout, const void* inp,
                                           const void* pre_gelu, const void* weight, int N, int IC, int OC,
                                           GeluKind kind) {
  bool fused = false;
  if (gelu_epilogue_eligible(IC, kind)) {
    // dpre^T (IC, N) = gelu'(pre^T) * (W^T dout^T); aux = pre (N, IC) row-major, D's layout.
    GemmArgs g = linear_dinp_args(dpre, dout, weight, N, IC, OC, false);
    g.epilogue = GemmEpilogue::DGelu;
    g.aux = const_cast<void*>(pre_gelu), g.aux_ld = IC;  // read only (backward epilogue)
    fused = gemm_->try_run(stream_, g);
  }
  if (!fused) {
    gemm_->run(stream_, linear_dinp_args(dpre, dout, weight, N, IC, OC, false));
    cuda::gelu_backward(stream_, dtype_, dpre, pre_gelu, dpre, std::size_t(N) * IC, kind);
  }
  linear_dweight(dweight, dbias, dout, inp, N, IC, OC);
}

// ---- elementwise ----

void CudaBackend::do_gelu_forward(void* out, const void* inp, std::size_t n, GeluKind kind) {
  cuda::gelu_forward(stream_, dtype_, out, inp, n, kind);
}
void CudaBackend::do_gelu_backward(void* dinp, const void* inp, const void* dout, std::size_t n, GeluKind kind) {
  cuda::gelu_backward(stream_, dtype_, dinp, inp, dout, n, kind);
}
void CudaBackend::do_swiglu_forward(void* out, const void* inp, int N, int F) {
  cuda::swiglu_forward(stream_, dtype_, out, inp, N, F);
}
void CudaBackend::do_swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F) {
  cuda::swiglu_backward(stream_, dtype_, dinp, inp, dout, N, F);
}
void CudaBackend::do_squared_relu_forward(void* out, const void* inp, std::size_t n) {
  cuda::squared_relu_forward(stream_, dtype_, out, inp, n);
}
void CudaBackend::do_squared_relu_backward(void* dinp, const void* inp, const void* dout, std::size_t n) {
  cuda::squared_relu_backward(stream_, dtype_, dinp, inp, dout, n);
}
void CudaBackend::do_geglu_forward(void* out, const void* inp, int N, int F, GeluKind kind) {
  cuda::geglu_forward(stream_, dtype_, out, inp, N, F, kind);
}
void CudaBackend::do_geglu_backward(void* dinp, const void* inp, const void* dout, int N, int F, GeluKind kind) {
  cuda::geglu_backward(stream_, dtype_, dinp, inp, dout, N, F, kind);
}
void CudaBackend::do_add(void* out, const void* a, const void* b, std::size_t n) {
  cuda::add(stream_, dtype_, out, a, b, n);
}
void CudaBackend::do_add_inplace(void* dst, const void* src, std::size_t n) {
  cuda::add(stream_, dtype_, dst, dst, src, n);
}
void CudaBackend::do_scale_inplace(float* x, float s, std::size_t n) { cuda::scale_f32(stream_, x, s, n); }

void CudaBackend::do_dropout_forward(void* out, const void* inp, std::size_t n, float p, uint64_t seed,
                                     uint64_t offset) {
  cuda::dropout_forward(stream_, dtype_, out, inp, n, p, seed, offset);
}
void CudaBackend::do_dropout_backward(void* dinp, const void* dout, std::size_t n, float p, uint64_t seed,
                                      uint64_t offset) {
  cuda::dropout_backward(stream_, dtype_, dinp, dout, n, p, seed, offset);
}

void CudaBackend::do_rope(void* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim,
                          float base, bool interleaved, bool inverse, RopeScaling scaling) {
  cuda::rope(stream_, dtype_, qkv, positions, N, NH, NKV, HS, rotary_dim, base, interleaved, inverse, scaling);
}

void CudaBackend::do_qk_norm_forward(void* qkv, void* qk_saved, float* rstd, const void* q_weight, const void* k_weight,
                                     int N, int NH, int NKV, int HS, float eps, bool zero_centered_gamma) {
  cuda::qk_norm_forward(stream_, dtype_, qkv, qk_saved, rstd, q_weight, k_weight, N, NH, NKV, HS, eps,
                        zero_centered_gamma);
}
void CudaBackend::do_qk_norm_backward(void* dqkv, float* dq_weight, float* dk_weight, const void* qk_saved,
                                      const void* q_weight, const void* k_weight, const float* rstd, int N, int NH,
                                      int NKV, int HS, bool zero_centered_gamma) {
  cuda::qk_norm_backward(stream_, dtype_, dqkv, dq_weight, dk_weight, qk_saved, q_weight, k_weight, rstd, N, NH, NKV,
                         HS, zero_centered_gamma);
}

void CudaBackend::do_fp8_cast_transpose(uint8_t* out, uint8_t* out_t, float* amax, const void* inp, const float* scale,
                                        int R, int C, Fp8Kind kind) {
  cuda::fp8_cast_transpose(stream_, dtype_, out, out_t, amax, inp, scale, R, C, kind);
}
void CudaBackend::do_fp8_dequantize(void* out, const uint8_t* inp, const float* scale_inv, std::size_t n,
                                    Fp8Kind kind) {
  cuda::fp8_dequantize(stream_, dtype_, out, inp, scale_inv, n, kind);
}
void CudaBackend::do_fp8_gemm(void* out, bool out_fp32, const uint8_t* a, Fp8Kind a_kind, const float* a_scale_inv,
                              const uint8_t* b, Fp8Kind b_kind, const float* b_scale_inv, int M, int N, int K,
                              float alpha, bool accumulate, float* amax, bool fast_accum, const void* bias) {
  cuda::fp8_gemm(stream_, *gemm_, info_, out_fp32 ? DType::F32 : dtype_, out, a, a_kind, a_scale_inv, b, b_kind,
                 b_scale_inv, M, N, K, alpha, accumulate, amax, fast_accum, bias, dtype_);
}
bool CudaBackend::fp8_gemm_accepts(const void* out, const void* a, const void* b, int M, int N, int K) const {
  return cuda::fp8_gemm_accepts(info_, out, a, b, M, N, K);
}

// ---- attention ----

bool CudaBackend::use_cudnn_attention(int T, int NH, int NKV, int HS, bool segments, float dropout_p) const {
  const AttentionBackend a = attention_backend();
  if (a == AttentionBackend::Flash || a == AttentionBackend::FlashFma) return false;
  std::string why;
  bool ok =
      cudnn_attention_ != nullptr && CudnnAttention::supports(info_, dtype_, T, NH, NKV, HS, segments, dropout_p, &why);
  if (!cudnn_attention_ && why.empty()) why = "cuDNN older than 9.0";
  if (a == AttentionBackend::Cudnn && !ok) {
    fail(
        "--attention-backend cudnn: cuDNN fused attention cannot run this case ({}); use --attention-backend "
        "flash or auto",
        why);
  }
  return ok;
}

const char* CudaBackend::attention_impl_for(int T, int NH, int NKV, int HS, bool segments, float dropout_p) const {
  return use_cudnn_attention(T, NH, NKV, HS, segments, dropout_p) ? "cudnn" : "flash";
}

namespace {
// The generic checks (heads, dropout probability) ran in Backend. The flash kernels are every CUDA
// path's fallback, so their head-size limit applies to all of them.
void check_flash_head_size(const char* op, int HS) {
  check(HS <= kFlashMaxHeadSize, "{}: head size HS={} is above {}, the limit of the cuda backend's flash kernels", op,
        HS, kFlashMaxHeadSize);
}
// A window that hides keys of this sequence length. The cuDNN graph built here has only the causal mask
// (no sliding-window band), so a windowed call runs on gptrain's own kernels.
bool hides_keys(int window, int T) { return window >= 0 && window < T - 1; }
void refuse_cudnn_window(AttentionBackend a, const char* op, int window) {
  check(a != AttentionBackend::Cudnn,
        "{}: --attention-backend cudnn: gptrain's cuDNN attention graph has no sliding window (--window-size "
        "{},0); use --attention-backend flash or auto",
        op, window);
}
}  // namespace

// Context-parallel blocks: gptrain's direct kernels whatever --attention-backend says (cuDNN's graph has
// no log-sum-exp merge of partial blocks; --context-parallel-size documents it).
void CudaBackend::do_attention_kv_pack(void* kv, const void* qkv, int N, int NH, int NKV, int HS) {
  cuda::attention_kv_pack(stream_, dtype_, kv, qkv, N, NH, NKV, HS);
}

void CudaBackend::do_attention_block_forward(float* out_acc, float* lse, const void* qkv, const void* kv, int B, int NH,
                                             int NKV, int HS, AttentionBlock blk, bool first, float dropout_p,
                                             uint64_t seed, uint64_t offset, HeadSlice heads) {
  check(HS <= cuda::kBlockAttentionMaxHeadSize, "attention_block_forward: head size HS={} is above {}", HS,
        cuda::kBlockAttentionMaxHeadSize);
  cuda::attention_block_forward(stream_, dtype_, out_acc, lse, qkv, kv, B, NH, NKV, HS, blk, first, dropout_p, seed,
                                offset, heads);
}

void CudaBackend::do_attention_block_backward(float* dq_acc, float* dkv_acc, const void* dout, const void* qkv,
                                              const void* kv, const void* out, const float* lse, int B, int NH, int NKV,
                                              int HS, AttentionBlock blk, float dropout_p, uint64_t seed,
                                              uint64_t offset, HeadSlice heads) {
  check(HS <= cuda::kBlockAttentionMaxHeadSize, "attention_block_backward: head size HS={} is above {}", HS,
        cuda::kBlockAttentionMaxHeadSize);
  cuda::attention_block_backward(stream_, dtype_, dq_acc, dkv_acc, dout, qkv, kv, out, lse, B, NH, NKV, HS, blk,
                                 dropout_p, seed, offset, heads);
}

void CudaBackend::do_attention_forward(void* out, float* lse, const void* qkv, const int32_t* segment_ids, int B, int T,
                                       int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset,
                                       HeadSlice heads, int window) {
  check_flash_head_size("attention_forward", HS);
  const bool windowed = hides_keys(window, T);
  if (windowed) refuse_cudnn_window(attention_backend(), "attention_forward", window);
  if (!windowed && use_cudnn_attention(T, NH, NKV, HS, segment_ids != nullptr, dropout_p)) {
    std::string why;
    if (cudnn_attention_->forward(stream_, dtype_, out, lse, qkv, B, T, NH, NKV, HS, &why)) return;
    if (attention_backend() == AttentionBackend::Cudnn)
      fail(
          "--attention-backend cudnn: cuDNN has no engine for B={} T={} NH={} NKV={} HS={} {}: {}; use "
          "--attention-backend flash or auto",
          B, T, NH, NKV, HS, dtype_name(dtype_), why);
    // auto: CudnnAttention logged the reason once for this shape; the flash kernels take over
  }
  const bool allow_tc = attention_backend() != AttentionBackend::FlashFma;
  cuda::own_attention_forward(stream_, dtype_, allow_tc, out, lse, qkv, segment_ids, B, T, NH, NKV, HS, dropout_p, seed,
                              offset, heads, windowed ? window : -1);
}

void CudaBackend::do_attention_backward(void* dqkv, const void* dout, const void* qkv, const void* out,
                                        const float* lse, const int32_t* segment_ids, int B, int T, int NH, int NKV,
                                        int HS, float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads,
                                        int window) {
  check_flash_head_size("attention_backward", HS);
  const bool windowed = hides_keys(window, T);
  if (windowed) {
    refuse_cudnn_window(attention_backend(), "attention_backward", window);
    cuda::own_attention_backward(stream_, dtype_, attention_backend() != AttentionBackend::FlashFma, ws_, dqkv, dout,
                                 qkv, out, lse, segment_ids, B, T, NH, NKV, HS, dropout_p, seed, offset, heads, window);
    return;
  }
  // Both backward paths recompute P from the saved logsumexp, which both forward paths write with the
  // same meaning, so the cuDNN backward may follow a flash forward and vice versa.
  const bool segments = segment_ids != nullptr;
  if (use_cudnn_attention(T, NH, NKV, HS, segments, dropout_p)) {
    std::string why;
    if (CudnnAttention::supports_backward(info_, dtype_, T, NH, NKV, HS, segments, dropout_p, &why) &&
        cudnn_attention_->backward(stream_, dtype_, dqkv, dout, qkv, out, lse, B, T, NH, NKV, HS, deterministic(),
                                   &why))
      return;
    cudnn_attention_->note_once(fmt::format(
        "cuDNN attention backward unavailable for T={} NH={} NKV={} HS={} {}{} ({}): the flash backward runs instead",
        T, NH, NKV, HS, dtype_name(dtype_), deterministic() ? " deterministic" : "", why));
  } else if (cudnn_attention_ && attention_backend() == AttentionBackend::Auto) {
    std::string why;
    CudnnAttention::supports(info_, dtype_, T, NH, NKV, HS, segments, dropout_p, &why);
    cudnn_attention_->note_once(
        fmt::format("--attention-backend auto: {}: cuDNN fused attention cannot run it, the flash kernels do", why));
  }
  const bool allow_tc = attention_backend() != AttentionBackend::FlashFma;
  cuda::own_attention_backward(stream_, dtype_, allow_tc, ws_, dqkv, dout, qkv, out, lse, segment_ids, B, T, NH, NKV,
                               HS, dropout_p, seed, offset, heads);
}

// ---- cross-entropy, optimizer ----

void CudaBackend::do_xent_stats(XentStats stats, const void* logits, const int32_t* targets, int N, int V_local,
                                int V_valid_local, int vocab_start) {
  cuda::xent_stats(stream_, dtype_, stats, logits, targets, N, V_local, V_valid_local, vocab_start);
}

void CudaBackend::do_xent_backward(void* dlogits, const void* logits, const int32_t* targets, const float* row_max,
                                   const float* row_sumexp, const float* dloss, int N, int V_local, int V_valid_local,
                                   int vocab_start) {
  cuda::xent_backward(stream_, dtype_, dlogits, logits, targets, row_max, row_sumexp, dloss, N, V_local, V_valid_local,
                      vocab_start);
}

void CudaBackend::do_xent_loss(float* losses, XentStats stats, int N) { cuda::xent_loss(stream_, losses, stats, N); }

// ---- mixture of experts (kernels/moe/moe.h) ----

void CudaBackend::do_moe_router_forward(float* probs, int32_t* experts, float* scores, const float* logits, int N,
                                        int E, int K, MoeScore score, bool pre_softmax, MoeChoice choice) {
  cuda::moe_router_forward(stream_, probs, experts, scores, logits, N, E, K, score, pre_softmax, choice);
}

void CudaBackend::do_moe_sinkhorn_router_forward(float* probs, int32_t* experts, float* normed, const float* logits,
                                                 int N, int E, int K, bool train) {
  cuda::moe_sinkhorn_router_forward(stream_, ws_, probs, experts, normed, logits, N, E, K, train);
}

void CudaBackend::do_moe_router_backward(float* dlogits, const float* dprobs, const float* dscores, const float* logits,
                                         const int32_t* experts, int N, int E, int K, MoeScore score,
                                         bool pre_softmax) {
  cuda::moe_router_backward(stream_, dlogits, dprobs, dscores, logits, experts, N, E, K, score, pre_softmax);
}

void CudaBackend::do_moe_dispatch_plan(int32_t* dest_row, int32_t* segment_rows, const int32_t* experts,
                                       const float* probs, int N, int E, int K, int capacity, MoeDropPolicy policy,
                                       bool pad_to_capacity) {
  cuda::moe_dispatch_plan(stream_, dest_row, segment_rows, experts, probs, N, E, K, capacity, policy, pad_to_capacity);
}

void CudaBackend::do_moe_permute(void* out, const void* inp, const int32_t* dest_row, int N, int K, int C, int R) {
  cuda::moe_permute(stream_, dtype_, out, inp, dest_row, N, K, C, R);
}

void CudaBackend::do_moe_permute_backward(void* dinp, const void* dout, const int32_t* dest_row, int N, int K, int C) {
  cuda::moe_permute_backward(stream_, dtype_, dinp, dout, dest_row, N, K, C);
}

void CudaBackend::do_moe_unpermute(void* out, const void* inp, const float* probs, const int32_t* dest_row, int N,
                                   int K, int C) {
  cuda::moe_unpermute(stream_, dtype_, out, inp, probs, dest_row, N, K, C);
}

void CudaBackend::do_moe_unpermute_backward(void* dinp, float* dprobs, const void* dout, const void* inp,
                                            const float* probs, const int32_t* dest_row, int N, int K, int C, int R) {
  cuda::moe_unpermute_backward(stream_, dtype_, dinp, dprobs, dout, inp, probs, dest_row, N, K, C, R);
}

void CudaBackend::do_moe_load_balancing_loss(float* loss, const float* scores, const int32_t* experts, int N, int E,
                                             int K, int seqs, float coeff) {
  cuda::moe_load_balancing_loss(stream_, ws_, loss, scores, experts, N, E, K, seqs, coeff);
}

void CudaBackend::do_moe_load_balancing_loss_backward(float* dscores, const int32_t* experts, int N, int E, int K,
                                                      int seqs, float coeff_times_dloss) {
  cuda::moe_load_balancing_loss_backward(stream_, ws_, dscores, experts, N, E, K, seqs, coeff_times_dloss);
}

void CudaBackend::do_moe_z_loss(float* loss, const float* logits, int N, int E, float coeff) {
  cuda::moe_z_loss(stream_, ws_, loss, logits, N, E, coeff);
}

void CudaBackend::do_moe_z_loss_backward(float* dlogits_acc, const float* logits, int N, int E,
                                         float coeff_times_dloss) {
  cuda::moe_z_loss_backward(stream_, dlogits_acc, logits, N, E, coeff_times_dloss);
}

void CudaBackend::do_moe_input_jitter(void* out, const void* inp, std::size_t n, float eps, uint64_t seed,
                                      uint64_t offset) {
  cuda::moe_input_jitter(stream_, dtype_, out, inp, n, eps, seed, offset);
}

void CudaBackend::do_moe_input_jitter_backward(void* dinp_acc, const void* dout, std::size_t n, float eps,
                                               uint64_t seed, uint64_t offset) {
  cuda::moe_input_jitter_backward(stream_, dtype_, dinp_acc, dout, n, eps, seed, offset);
}

void CudaBackend::do_moe_shared_gate_forward(void* out_acc, const void* shared, const void* gate_logits, int N, int C) {
  cuda::moe_shared_gate_forward(stream_, dtype_, out_acc, shared, gate_logits, N, C);
}

void CudaBackend::do_moe_shared_gate_backward(void* dshared, void* dgate_logits, const void* dout, const void* shared,
                                              const void* gate_logits, int N, int C) {
  cuda::moe_shared_gate_backward(stream_, dtype_, dshared, dgate_logits, dout, shared, gate_logits, N, C);
}

// The grouped expert GEMM: one cuBLASLt GEMM per non-empty chunk on its contiguous rows (the row counts
// are host memory), one weight-gradient GEMM per expert. A grouped or batched cuBLASLt call is the
// alternative; bench_gpu_ops' MoE rows (against a dense GEMM of the same FLOPs) are what decides.
void CudaBackend::do_moe_grouped_matmul_forward(void* out, const void* inp, const void* weight,
                                                const int32_t* chunk_rows, int E, int chunks, int IC, int OC) {
  const std::size_t es = dtype_size(dtype_);
  std::size_t row = 0;
  for (int e = 0; e < E; ++e) {
    const char* w = static_cast<const char*>(weight) + static_cast<std::size_t>(e) * OC * IC * es;
    for (int j = 0; j < chunks; ++j) {
      const int rows = chunk_rows[e * chunks + j];
      if (rows > 0)
        gemm_->run(stream_,
                   linear_forward_args(static_cast<char*>(out) + row * OC * es,
                                       static_cast<const char*>(inp) + row * IC * es, w, nullptr, rows, IC, OC));
      row += static_cast<std::size_t>(rows);
    }
  }
}

void CudaBackend::do_moe_grouped_matmul_backward(void* dinp, float* dweight, const void* dout, const void* inp,
                                                 const void* weight, const int32_t* chunk_rows, int E, int chunks,
                                                 int IC, int OC) {
  const std::size_t es = dtype_size(dtype_);
  std::size_t row = 0;
  for (int e = 0; e < E; ++e) {
    const std::size_t w = static_cast<std::size_t>(e) * OC * IC, first = row;
    for (int j = 0; j < chunks; ++j) {
      const int rows = chunk_rows[e * chunks + j];
      if (rows > 0)
        gemm_->run(stream_, linear_dinp_args(static_cast<char*>(dinp) + row * IC * es,
                                             static_cast<const char*>(dout) + row * OC * es,
                                             static_cast<const char*>(weight) + w * es, rows, IC, OC, false));
      row += static_cast<std::size_t>(rows);
    }
    const int rows = static_cast<int>(row - first);
    if (rows > 0)
      linear_dweight(dweight + w, nullptr, static_cast<const char*>(dout) + first * OC * es,
                     static_cast<const char*>(inp) + first * IC * es, rows, IC, OC);
  }
}

void CudaBackend::do_adamw_update(float* master, void* model_param, const float* grad, float* m, float* v,
                                  std::size_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                                  int step, float grad_scale) {
  cuda::adamw_update(stream_, dtype_, master, model_param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, step,
                     grad_scale);
}

void CudaBackend::do_adamw_update_stored(float* master, void* model_param, const float* grad, AdamWMoments mv,
                                         std::size_t n, float lr, float beta1, float beta2, float eps,
                                         float weight_decay, int step, float grad_scale) {
  cuda::adamw_update_stored(stream_, dtype_, master, model_param, grad, mv, n, lr, beta1, beta2, eps, weight_decay,
                            step, grad_scale);
}

void CudaBackend::do_adamw_update_stochastic(void* param, const float* grad, AdamWMoments mv, std::size_t n, float lr,
                                             float beta1, float beta2, float eps, float weight_decay, int step,
                                             float grad_scale, StochasticRounding sr) {
  check(dtype_ == DType::F32 || dtype_ == DType::BF16,
        "adamw_update_stochastic: parameters in {}: only bf16 (or fp32 holding bf16 values)", dtype_name(dtype_));
  cuda::adamw_update_stochastic(stream_, dtype_, param, grad, mv, n, lr, beta1, beta2, eps, weight_decay, step,
                                grad_scale, sr);
}

void CudaBackend::do_sgd_update(float* master, void* model_param, const float* grad, float* momentum_buf, std::size_t n,
                                float lr, float momentum, float weight_decay, float grad_scale) {
  cuda::sgd_update(stream_, dtype_, master, model_param, grad, momentum_buf, n, lr, momentum, weight_decay, grad_scale);
}

void CudaBackend::do_lion_update(float* master, void* model_param, const float* grad, float* exp_avg, std::size_t n,
                                 float lr, float beta1, float beta2, float weight_decay, float grad_scale) {
  cuda::lion_update(stream_, dtype_, master, model_param, grad, exp_avg, n, lr, beta1, beta2, weight_decay, grad_scale);
}

void CudaBackend::do_muon_momentum(float* buf, float* u, const float* grad, std::size_t n, float grad_scale,
                                   float momentum, bool nesterov) {
  cuda::muon_momentum(stream_, buf, u, grad, n, grad_scale, momentum, nesterov);
}

void CudaBackend::do_muon_apply(float* master, void* model_param, const float* o, std::size_t n, float lr,
                                float weight_decay, float scale, float extra_scale) {
  cuda::muon_apply(stream_, dtype_, master, model_param, o, n, lr, weight_decay, scale, extra_scale);
}

void CudaBackend::do_muon_scale_round(float* x, std::size_t n, float divisor, bool round_bf16) {
  cuda::muon_scale_round(stream_, x, n, divisor, round_bf16);
}

void CudaBackend::do_gemm_f32(float* C, const float* A, const float* B, int M, int N, int K, bool trans_a, bool trans_b,
                              float alpha, float beta) {
  // Row-major C (M, N) is column-major C^T (N, M) = op(B)^T op(A)^T: cuBLAS's A is our B and its B our A.
  GemmArgs g;
  g.transa = trans_b, g.transb = trans_a;
  g.m = N, g.n = M, g.k = K;
  g.A = B, g.a_type = CUDA_R_32F, g.lda = trans_b ? K : N;
  g.B = A, g.b_type = CUDA_R_32F, g.ldb = trans_a ? M : K;
  g.D = C, g.d_type = CUDA_R_32F, g.ldd = N;
  g.alpha = alpha, g.beta = beta;
  gemm_->run(stream_, g);
}

void CudaBackend::do_copy_2d_f32(float* dst, int dst_ld, const float* src, int src_ld, int rows, int cols) {
  GPTRAIN_CUDA_CHECK(cudaMemcpy2DAsync(dst, std::size_t(dst_ld) * sizeof(float), src,
                                       std::size_t(src_ld) * sizeof(float), std::size_t(cols) * sizeof(float),
                                       std::size_t(rows), cudaMemcpyDeviceToDevice, stream_));
}

double CudaBackend::do_sum_squares(const float* x, std::size_t n) { return cuda::sum_squares(stream_, ws_, x, n); }

}  // namespace cuda

}  // namespace gptrain

gptrain::Backend* gptrain_cuda_make_backend(gptrain::DType compute_dtype, const gptrain::BackendOptions* options) {
  using namespace gptrain;
  auto be = std::make_unique<cuda::CudaBackend>(compute_dtype, *options);
  log::info("cuda backend: GPU {}, attention {}, deterministic {}", options->device,
            attention_backend_name(options->attention), options->deterministic);
  return be.release();
}
