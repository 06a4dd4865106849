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
#include "kernels/moe/moe.h"
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
};

float* F(void* p) { return static_cast<float*>(p); }
const float* F(const void* p) { return static_cast<const float*>(p); }

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

// ---- ops: arguments were checked by Backend (kernels/backend.cpp); each forwards to its CPU twin ----

void CpuBackend::do_embedding_forward(void* out, const int32_t* tokens, const int32_t* positions, const void* wte,
                                      const void* wpe, int N, int C, int vocab_start, int V_local) {
  cpu::embedding_forward(F(out), tokens, positions, F(wte), F(wpe), N, C, vocab_start, V_local);
}

void CpuBackend::do_embedding_backward(float* dwte, float* dwpe, const void* dout, const int32_t* tokens,
                                       const int32_t* positions, int N, int C, int vocab_start, int V_local) {
  cpu::embedding_backward(dwte, dwpe, F(dout), tokens, positions, N, C, vocab_start, V_local);
}

void CpuBackend::do_layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight,
                                      const void* bias, int N, int C, float eps, bool zero_centered_gamma) {
  cpu::layernorm_forward(F(out), mean, rstd, F(inp), F(weight), F(bias), N, C, eps, zero_centered_gamma);
}

void CpuBackend::do_layernorm_backward(void* dinp_acc, float* dweight, float* dbias, const void* dout, const void* inp,
                                       const void* weight, const float* mean, const float* rstd, int N, int C,
                                       bool zero_centered_gamma) {
  cpu::layernorm_backward(F(dinp_acc), dweight, dbias, F(dout), F(inp), F(weight), mean, rstd, N, C,
                          zero_centered_gamma);
}

void CpuBackend::do_rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C,
                                    float eps, bool zero_centered_gamma) {
  cpu::rmsnorm_forward(F(out), rstd, F(inp), F(weight), N, C, eps, zero_centered_gamma);
}

void CpuBackend::do_rmsnorm_backward(void* dinp_acc, float* dweight, const void* dout, const void* inp,
                                     const void* weight, const float* rstd, int N, int C, bool zero_centered_gamma) {
  cpu::rmsnorm_backward(F(dinp_acc), dweight, F(dout), F(inp), F(weight), rstd, N, C, zero_centered_gamma);
}

void CpuBackend::do_residual_layernorm_forward(void* residual_out, void* norm_out, float* mean, float* rstd,
                                               const void* a, const void* b, const void* weight, const void* bias,
                                               int N, int C, float eps, bool zero_centered_gamma) {
  cpu::residual_layernorm_forward(F(residual_out), F(norm_out), mean, rstd, F(a), F(b), F(weight), F(bias), N, C, eps,
                                  zero_centered_gamma);
}

void CpuBackend::do_residual_rmsnorm_forward(void* residual_out, void* norm_out, float* rstd, const void* a,
                                             const void* b, const void* weight, int N, int C, float eps,
                                             bool zero_centered_gamma) {
  cpu::residual_rmsnorm_forward(F(residual_out), F(norm_out), rstd, F(a), F(b), F(weight), N, C, eps,
                                zero_centered_gamma);
}

void CpuBackend::do_matmul_forward(void* out, const void* inp, const void* weight, const void* bias, int N, int IC,
                                   int OC) {
  cpu::matmul_forward(F(out), F(inp), F(weight), F(bias), N, IC, OC);
}

void CpuBackend::do_matmul_backward(void* dinp, float* dweight, float* dbias, const void* dout, const void* inp,
                                    const void* weight, int N, int IC, int OC, bool accumulate_dinp) {
  cpu::matmul_backward(F(dinp), dweight, dbias, F(dout), F(inp), F(weight), N, IC, OC, accumulate_dinp);
}

void CpuBackend::do_matmul_bias_gelu_forward(void* out, void* pre_gelu, const void* inp, const void* weight,
                                             const void* bias, int N, int IC, int OC, GeluKind kind) {
  cpu::matmul_bias_gelu_forward(F(out), F(pre_gelu), F(inp), F(weight), F(bias), N, IC, OC, kind);
}

void CpuBackend::do_matmul_dgelu_backward(void* dpre, float* dweight, float* dbias, const void* dout, const void* inp,
                                          const void* pre_gelu, const void* weight, int N, int IC, int OC,
                                          GeluKind kind) {
  cpu::matmul_dgelu_backward(F(dpre), dweight, dbias, F(dout), F(inp), F(pre_gelu), F(weight), N, IC, OC, kind);
}

void CpuBackend::do_gelu_forward(void* out, const void* inp, std::size_t n, GeluKind kind) {
  cpu::gelu_forward(F(out), F(inp), n, kind);
}

void CpuBackend::do_gelu_backward(void* dinp, const void* inp, const void* dout, std::size_t n, GeluKind kind) {
  cpu::gelu_backward(F(dinp), F(inp), F(dout), n, kind);
}

void CpuBackend::do_swiglu_forward(void* out, const void* inp, int N, int F_) {
  cpu::swiglu_forward(F(out), F(inp), N, F_);
}

void CpuBackend::do_swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F_) {
  cpu::swiglu_backward(F(dinp), F(inp), F(dout), N, F_);
}

void CpuBackend::do_add(void* out, const void* a, const void* b, std::size_t n) { cpu::add(F(out), F(a), F(b), n); }

void CpuBackend::do_add_inplace(void* dst, const void* src, std::size_t n) { cpu::add_inplace(F(dst), F(src), n); }

void CpuBackend::do_scale_inplace(float* x, float s, std::size_t n) { cpu::scale_inplace(x, s, n); }

void CpuBackend::do_dropout_forward(void* out, const void* inp, std::size_t n, float p, uint64_t seed,
                                    uint64_t offset) {
  cpu::dropout(F(out), F(inp), n, p, seed, offset);
}

void CpuBackend::do_dropout_backward(void* dinp, const void* dout, std::size_t n, float p, uint64_t seed,
                                     uint64_t offset) {
  cpu::dropout(F(dinp), F(dout), n, p, seed, offset);
}

void CpuBackend::do_rope(void* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim,
                         float base, bool interleaved, bool inverse) {
  cpu::rope(F(qkv), positions, N, NH, NKV, HS, rotary_dim, base, interleaved, inverse);
}

void CpuBackend::do_attention_forward(void* out, float* lse, const void* qkv, const int32_t* segment_ids, int B, int T,
                                      int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset) {
  cpu::attention_forward(F(out), lse, F(qkv), segment_ids, B, T, NH, NKV, HS, dropout_p, seed, offset);
}

void CpuBackend::do_attention_backward(void* dqkv, const void* dout, const void* qkv, const void* out, const float* lse,
                                       const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS,
                                       float dropout_p, uint64_t seed, uint64_t offset) {
  cpu::attention_backward(F(dqkv), F(dout), F(qkv), F(out), lse, segment_ids, B, T, NH, NKV, HS, dropout_p, seed,
                          offset);
}

void CpuBackend::do_xent_stats(XentStats stats, const void* logits, const int32_t* targets, int N, int V_local,
                               int V_valid_local, int vocab_start) {
  cpu::xent_stats(stats, F(logits), targets, N, V_local, V_valid_local, vocab_start);
}

void CpuBackend::do_xent_backward(void* dlogits, const void* logits, const int32_t* targets, const float* row_max,
                                  const float* row_sumexp, const float* dloss, int N, int V_local, int V_valid_local,
                                  int vocab_start) {
  cpu::xent_backward(F(dlogits), F(logits), targets, row_max, row_sumexp, dloss, N, V_local, V_valid_local,
                     vocab_start);
}

void CpuBackend::do_xent_loss(float* losses, XentStats stats, int N) { cpu::xent_loss(losses, stats, N); }

void CpuBackend::do_moe_router_forward(float* probs, int32_t* experts, float* scores, const float* logits, int N, int E,
                                       int K, MoeScore score, bool pre_softmax) {
  cpu::moe_router_forward(probs, experts, scores, logits, N, E, K, score, pre_softmax);
}

void CpuBackend::do_moe_sinkhorn_router_forward(float* probs, int32_t* experts, float* normed, const float* logits,
                                                int N, int E, int K, bool train) {
  cpu::moe_sinkhorn_router_forward(probs, experts, normed, logits, N, E, K, train);
}

void CpuBackend::do_moe_router_backward(float* dlogits, const float* dprobs, const float* dscores, const float* logits,
                                        const int32_t* experts, int N, int E, int K, MoeScore score, bool pre_softmax) {
  cpu::moe_router_backward(dlogits, dprobs, dscores, logits, experts, N, E, K, score, pre_softmax);
}

void CpuBackend::do_moe_dispatch_plan(int32_t* dest_row, int32_t* segment_rows, const int32_t* experts,
                                      const float* probs, int N, int E, int K, int capacity, MoeDropPolicy policy,
                                      bool pad_to_capacity) {
  cpu::moe_dispatch_plan(dest_row, segment_rows, experts, probs, N, E, K, capacity, policy, pad_to_capacity);
}

void CpuBackend::do_moe_permute(void* out, const void* inp, const int32_t* dest_row, int N, int K, int C, int R) {
  cpu::moe_permute(F(out), F(inp), dest_row, N, K, C, R);
}

void CpuBackend::do_moe_permute_backward(void* dinp, const void* dout, const int32_t* dest_row, int N, int K, int C) {
  cpu::moe_permute_backward(F(dinp), F(dout), dest_row, N, K, C);
}

void CpuBackend::do_moe_unpermute(void* out, const void* inp, const float* probs, const int32_t* dest_row, int N, int K,
                                  int C) {
  cpu::moe_unpermute(F(out), F(inp), probs, dest_row, N, K, C);
}

void CpuBackend::do_moe_unpermute_backward(void* dinp, float* dprobs, const void* dout, const void* inp,
                                           const float* probs, const int32_t* dest_row, int N, int K, int C, int R) {
  cpu::moe_unpermute_backward(F(dinp), dprobs, F(dout), F(inp), probs, dest_row, N, K, C, R);
}

void CpuBackend::do_moe_grouped_matmul_forward(void* out, const void* inp, const void* weight,
                                               const int32_t* chunk_rows, int E, int chunks, int IC, int OC) {
  cpu::moe_grouped_matmul_forward(F(out), F(inp), F(weight), chunk_rows, E, chunks, IC, OC);
}

void CpuBackend::do_moe_grouped_matmul_backward(void* dinp, float* dweight, const void* dout, const void* inp,
                                                const void* weight, const int32_t* chunk_rows, int E, int chunks,
                                                int IC, int OC) {
  cpu::moe_grouped_matmul_backward(F(dinp), dweight, F(dout), F(inp), F(weight), chunk_rows, E, chunks, IC, OC);
}

void CpuBackend::do_moe_load_balancing_loss(float* loss, const float* scores, const int32_t* experts, int N, int E,
                                            int K, int seqs, float coeff) {
  cpu::moe_load_balancing_loss(loss, scores, experts, N, E, K, seqs, coeff);
}

void CpuBackend::do_moe_load_balancing_loss_backward(float* dscores, const int32_t* experts, int N, int E, int K,
                                                     int seqs, float coeff_times_dloss) {
  cpu::moe_load_balancing_loss_backward(dscores, experts, N, E, K, seqs, coeff_times_dloss);
}

void CpuBackend::do_moe_z_loss(float* loss, const float* logits, int N, int E, float coeff) {
  cpu::moe_z_loss(loss, logits, N, E, coeff);
}

void CpuBackend::do_moe_z_loss_backward(float* dlogits_acc, const float* logits, int N, int E,
                                        float coeff_times_dloss) {
  cpu::moe_z_loss_backward(dlogits_acc, logits, N, E, coeff_times_dloss);
}

void CpuBackend::do_adamw_update(float* master, void* model_param, const float* grad, float* m, float* v, std::size_t n,
                                 float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                                 float grad_scale) {
  cpu::adamw_update(master, F(model_param), grad, m, v, n, lr, beta1, beta2, eps, weight_decay, step, grad_scale);
}

double CpuBackend::do_sum_squares(const float* x, std::size_t n) { return cpu::sum_squares(x, n); }

std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace gptrain
