// CpuBackend: the fp32 reference implementation of the op interface (kernels/backend.h). Each op
// forwards to the CPU twin in the op's folder (kernels/<op>/<op>_cpu.cpp, declared in kernels/<op>/<op>.h).
// Host memory is the "device" memory here, so the copy methods are memcpy and synchronize() has nothing
// to wait for. Threading: OpenMP everywhere (OMP_NUM_THREADS); the constructor pins OpenBLAS to one
// thread and the GEMM wrapper splits work across the OpenMP threads itself (kernels/common/cpu_parallel.h).
// make_backend("cpu", ...) (kernels/backend.cpp) is the only way in: the class is private to this file.
#include <cblas.h>

#include <cstdlib>
#include <cstring>

#include "core/common/error.h"
#include "kernels/adamw/adamw.h"
#include "kernels/attention/attention.h"
#include "kernels/dropout/dropout.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/embedding/embedding.h"
#include "kernels/gelu/gelu.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/matmul/matmul.h"
#include "kernels/rope/rope.h"
#include "kernels/xent/xent.h"

namespace gptrain {
namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const BackendOptions& options);
  const char* name() const override { return "cpu"; }
  DType compute_dtype() const override { return DType::F32; }
  std::optional<DeviceMemory> device_memory() const override { return std::nullopt; }
  BackendScratch scratch_bytes() const override { return {}; }  // per-call host temporaries only

  void* alloc(std::size_t bytes) override;
  void release(void* p) override;
  void copy_to_device(void* dst, const void* host_src, std::size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, std::size_t bytes) override;
  void copy(void* dst, const void* src, std::size_t bytes) override;
  void fill_zero(void* p, std::size_t bytes) override;
  void synchronize() override {}
  void convert(void* dst, DType dst_t, const void* src, DType src_t, std::size_t n) override;

  void embedding_forward(void* out, const int32_t* tokens, const int32_t* positions, const void* wte,
                         const void* wpe, int N, int C, int vocab_start, int V_local) override;
  void embedding_backward(float* dwte, float* dwpe, const void* dout, const int32_t* tokens,
                          const int32_t* positions, int N, int C, int vocab_start, int V_local) override;

  void layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight,
                         const void* bias, int N, int C, float eps) override;
  void layernorm_backward(void* dinp_acc, float* dweight, float* dbias, const void* dout, const void* inp,
                          const void* weight, const float* mean, const float* rstd, int N, int C) override;
  void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C,
                       float eps) override;
  void rmsnorm_backward(void* dinp_acc, float* dweight, const void* dout, const void* inp, const void* weight,
                        const float* rstd, int N, int C) override;
  void residual_layernorm_forward(void* residual_out, void* norm_out, float* mean, float* rstd, const void* a,
                                  const void* b, const void* weight, const void* bias, int N, int C,
                                  float eps) override;
  void residual_rmsnorm_forward(void* residual_out, void* norm_out, float* rstd, const void* a, const void* b,
                                const void* weight, int N, int C, float eps) override;

  void matmul_forward(void* out, const void* inp, const void* weight, const void* bias, int N, int IC,
                      int OC) override;
  void matmul_backward(void* dinp, float* dweight, float* dbias, const void* dout, const void* inp,
                       const void* weight, int N, int IC, int OC, bool accumulate_dinp) override;
  void matmul_bias_gelu_forward(void* out, void* pre_gelu, const void* inp, const void* weight, const void* bias,
                                int N, int IC, int OC, GeluKind kind) override;
  void matmul_dgelu_backward(void* dpre, float* dweight, float* dbias, const void* dout, const void* inp,
                             const void* pre_gelu, const void* weight, int N, int IC, int OC,
                             GeluKind kind) override;

  void gelu_forward(void* out, const void* inp, std::size_t n, GeluKind kind) override;
  void gelu_backward(void* dinp, const void* inp, const void* dout, std::size_t n, GeluKind kind) override;
  void swiglu_forward(void* out, const void* inp, int N, int F) override;
  void swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F) override;

  void add(void* out, const void* a, const void* b, std::size_t n) override;
  void add_inplace(void* dst, const void* src, std::size_t n) override;
  void scale_inplace(float* x, float s, std::size_t n) override;

  void dropout_forward(void* out, const void* inp, std::size_t n, float p, uint64_t seed,
                       uint64_t offset) override;
  void dropout_backward(void* dinp, const void* dout, std::size_t n, float p, uint64_t seed,
                        uint64_t offset) override;

  void rope(void* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim, float base,
            bool interleaved, bool inverse) override;

  void attention_forward(void* out, float* lse, const void* qkv, const int32_t* segment_ids, int B, int T,
                         int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset) override;
  void attention_backward(void* dqkv, const void* dout, const void* qkv, const void* out, const float* lse,
                          const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                          uint64_t seed, uint64_t offset) override;

  void xent_stats(XentStats stats, const void* logits, const int32_t* targets, int N, int V_local,
                  int V_valid_local, int vocab_start) override;
  void xent_backward(void* dlogits, const void* logits, const int32_t* targets, const float* row_max,
                     const float* row_sumexp, const float* dloss, int N, int V_local, int V_valid_local,
                     int vocab_start) override;
  void xent_loss(float* losses, XentStats stats, int N) override;

  void adamw_update(float* master, void* model_param, const float* grad, float* m, float* v, std::size_t n,
                    float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                    float grad_scale) override;
  double sum_squares(const float* x, std::size_t n) override;
};

float* F(void* p) { return static_cast<float*>(p); }
const float* F(const void* p) { return static_cast<const float*>(p); }

void check_dropout_p(float p, const char* op) {
  check(p >= 0.0f && p < 1.0f, "{}: dropout probability {} is outside [0, 1)", op, p);
}

}  // namespace

CpuBackend::CpuBackend(const BackendOptions& options) : Backend(options) {
  // One thread pool (OpenMP): GEMMs are split across OpenMP threads, each calling single-threaded BLAS.
  openblas_set_num_threads(1);
}

void* CpuBackend::alloc(std::size_t bytes) {
  constexpr std::size_t kAlign = 64;  // a cache line, and full AVX-512 vectors
  const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (p == nullptr) fail("cpu backend: out of host memory allocating {} bytes", bytes);
  return p;
}

void CpuBackend::release(void* p) { std::free(p); }

void CpuBackend::copy_to_device(void* dst, const void* host_src, std::size_t bytes) { copy(dst, host_src, bytes); }
void CpuBackend::copy_to_host(void* host_dst, const void* src, std::size_t bytes) { copy(host_dst, src, bytes); }

void CpuBackend::copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes != 0 && dst != src) std::memmove(dst, src, bytes);
}

void CpuBackend::fill_zero(void* p, std::size_t bytes) {
  if (bytes != 0) std::memset(p, 0, bytes);
}

void CpuBackend::convert(void* dst, DType dst_t, const void* src, DType src_t, std::size_t n) {
  cpu::convert(dst, dst_t, src, src_t, n);
}

void CpuBackend::embedding_forward(void* out, const int32_t* tokens, const int32_t* positions, const void* wte,
                                   const void* wpe, int N, int C, int vocab_start, int V_local) {
  cpu::embedding_forward(F(out), tokens, positions, F(wte), F(wpe), N, C, vocab_start, V_local);
}

void CpuBackend::embedding_backward(float* dwte, float* dwpe, const void* dout, const int32_t* tokens,
                                    const int32_t* positions, int N, int C, int vocab_start, int V_local) {
  cpu::embedding_backward(dwte, dwpe, F(dout), tokens, positions, N, C, vocab_start, V_local);
}

void CpuBackend::layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight,
                                   const void* bias, int N, int C, float eps) {
  cpu::layernorm_forward(F(out), mean, rstd, F(inp), F(weight), F(bias), N, C, eps);
}

void CpuBackend::layernorm_backward(void* dinp_acc, float* dweight, float* dbias, const void* dout, const void* inp,
                                    const void* weight, const float* mean, const float* rstd, int N, int C) {
  cpu::layernorm_backward(F(dinp_acc), dweight, dbias, F(dout), F(inp), F(weight), mean, rstd, N, C);
}

void CpuBackend::rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C,
                                 float eps) {
  cpu::rmsnorm_forward(F(out), rstd, F(inp), F(weight), N, C, eps);
}

void CpuBackend::rmsnorm_backward(void* dinp_acc, float* dweight, const void* dout, const void* inp,
                                  const void* weight, const float* rstd, int N, int C) {
  cpu::rmsnorm_backward(F(dinp_acc), dweight, F(dout), F(inp), F(weight), rstd, N, C);
}

void CpuBackend::residual_layernorm_forward(void* residual_out, void* norm_out, float* mean, float* rstd,
                                            const void* a, const void* b, const void* weight, const void* bias, int N,
                                            int C, float eps) {
  check(norm_out != residual_out && norm_out != a && norm_out != b,
        "residual_layernorm_forward: norm_out must not alias residual_out, a or b");
  cpu::residual_layernorm_forward(F(residual_out), F(norm_out), mean, rstd, F(a), F(b), F(weight), F(bias), N, C,
                                  eps);
}

void CpuBackend::residual_rmsnorm_forward(void* residual_out, void* norm_out, float* rstd, const void* a,
                                          const void* b, const void* weight, int N, int C, float eps) {
  check(norm_out != residual_out && norm_out != a && norm_out != b,
        "residual_rmsnorm_forward: norm_out must not alias residual_out, a or b");
  cpu::residual_rmsnorm_forward(F(residual_out), F(norm_out), rstd, F(a), F(b), F(weight), N, C, eps);
}

void CpuBackend::matmul_forward(void* out, const void* inp, const void* weight, const void* bias, int N, int IC,
                                int OC) {
  cpu::matmul_forward(F(out), F(inp), F(weight), F(bias), N, IC, OC);
}

void CpuBackend::matmul_backward(void* dinp, float* dweight, float* dbias, const void* dout, const void* inp,
                                 const void* weight, int N, int IC, int OC, bool accumulate_dinp) {
  cpu::matmul_backward(F(dinp), dweight, dbias, F(dout), F(inp), F(weight), N, IC, OC, accumulate_dinp);
}

void CpuBackend::matmul_bias_gelu_forward(void* out, void* pre_gelu, const void* inp, const void* weight,
                                          const void* bias, int N, int IC, int OC, GeluKind kind) {
  check(out != pre_gelu && out != inp && pre_gelu != inp,
        "matmul_bias_gelu_forward: out, pre_gelu and inp must be distinct buffers");
  cpu::matmul_bias_gelu_forward(F(out), F(pre_gelu), F(inp), F(weight), F(bias), N, IC, OC, kind);
}

void CpuBackend::matmul_dgelu_backward(void* dpre, float* dweight, float* dbias, const void* dout, const void* inp,
                                       const void* pre_gelu, const void* weight, int N, int IC, int OC,
                                       GeluKind kind) {
  check(dpre != dout && dpre != inp && dpre != pre_gelu,
        "matmul_dgelu_backward: dpre must not alias dout, inp or pre_gelu");
  cpu::matmul_dgelu_backward(F(dpre), dweight, dbias, F(dout), F(inp), F(pre_gelu), F(weight), N, IC, OC, kind);
}

void CpuBackend::gelu_forward(void* out, const void* inp, std::size_t n, GeluKind kind) {
  cpu::gelu_forward(F(out), F(inp), n, kind);
}

void CpuBackend::gelu_backward(void* dinp, const void* inp, const void* dout, std::size_t n, GeluKind kind) {
  cpu::gelu_backward(F(dinp), F(inp), F(dout), n, kind);
}

void CpuBackend::swiglu_forward(void* out, const void* inp, int N, int F_) {
  cpu::swiglu_forward(F(out), F(inp), N, F_);
}

void CpuBackend::swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F_) {
  cpu::swiglu_backward(F(dinp), F(inp), F(dout), N, F_);
}

void CpuBackend::add(void* out, const void* a, const void* b, std::size_t n) { cpu::add(F(out), F(a), F(b), n); }
void CpuBackend::add_inplace(void* dst, const void* src, std::size_t n) { cpu::add_inplace(F(dst), F(src), n); }
void CpuBackend::scale_inplace(float* x, float s, std::size_t n) { cpu::scale_inplace(x, s, n); }

void CpuBackend::dropout_forward(void* out, const void* inp, std::size_t n, float p, uint64_t seed,
                                 uint64_t offset) {
  check_dropout_p(p, "dropout_forward");
  cpu::dropout(F(out), F(inp), n, p, seed, offset);
}

void CpuBackend::dropout_backward(void* dinp, const void* dout, std::size_t n, float p, uint64_t seed,
                                  uint64_t offset) {
  check_dropout_p(p, "dropout_backward");
  cpu::dropout(F(dinp), F(dout), n, p, seed, offset);
}

void CpuBackend::rope(void* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim,
                      float base, bool interleaved, bool inverse) {
  check(rotary_dim > 0 && rotary_dim % 2 == 0 && rotary_dim <= HS,
        "rope: rotary_dim {} must be even, positive and at most the head size {}", rotary_dim, HS);
  check(base > 0.0f, "rope: rotary base {} must be positive", base);
  cpu::rope(F(qkv), positions, N, NH, NKV, HS, rotary_dim, base, interleaved, inverse);
}

void CpuBackend::attention_forward(void* out, float* lse, const void* qkv, const int32_t* segment_ids, int B, int T,
                                   int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset) {
  check(NKV > 0 && NH % NKV == 0, "attention: {} query heads are not a multiple of {} KV heads", NH, NKV);
  check_dropout_p(dropout_p, "attention_forward");
  cpu::attention_forward(F(out), lse, F(qkv), segment_ids, B, T, NH, NKV, HS, dropout_p, seed, offset);
}

void CpuBackend::attention_backward(void* dqkv, const void* dout, const void* qkv, const void* out,
                                    const float* lse, const int32_t* segment_ids, int B, int T, int NH, int NKV,
                                    int HS, float dropout_p, uint64_t seed, uint64_t offset) {
  check(NKV > 0 && NH % NKV == 0, "attention: {} query heads are not a multiple of {} KV heads", NH, NKV);
  check_dropout_p(dropout_p, "attention_backward");
  cpu::attention_backward(F(dqkv), F(dout), F(qkv), F(out), lse, segment_ids, B, T, NH, NKV, HS, dropout_p, seed,
                          offset);
}

void CpuBackend::xent_stats(XentStats stats, const void* logits, const int32_t* targets, int N, int V_local,
                            int V_valid_local, int vocab_start) {
  check(V_valid_local >= 0 && V_valid_local <= V_local, "xent: {} valid columns of a {}-column shard",
        V_valid_local, V_local);
  cpu::xent_stats(stats, F(logits), targets, N, V_local, V_valid_local, vocab_start);
}

void CpuBackend::xent_backward(void* dlogits, const void* logits, const int32_t* targets, const float* row_max,
                               const float* row_sumexp, const float* dloss, int N, int V_local, int V_valid_local,
                               int vocab_start) {
  cpu::xent_backward(F(dlogits), F(logits), targets, row_max, row_sumexp, dloss, N, V_local, V_valid_local,
                     vocab_start);
}

void CpuBackend::xent_loss(float* losses, XentStats stats, int N) { cpu::xent_loss(losses, stats, N); }

void CpuBackend::adamw_update(float* master, void* model_param, const float* grad, float* m, float* v,
                              std::size_t n, float lr, float beta1, float beta2, float eps, float weight_decay,
                              int step, float grad_scale) {
  check(step >= 1, "adamw_update: step {} must be >= 1 (bias correction)", step);
  cpu::adamw_update(master, F(model_param), grad, m, v, n, lr, beta1, beta2, eps, weight_decay, step, grad_scale);
}

double CpuBackend::sum_squares(const float* x, std::size_t n) { return cpu::sum_squares(x, n); }

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace gptrain
