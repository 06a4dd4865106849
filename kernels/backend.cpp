// The backend-neutral part of kernels/backend.h: dtype helpers, --attention-backend values (the same in
// CUDA and CPU-only builds, so the flag parses the same everywhere), make_backend (the one place that
// maps a backend name, compute dtype and options to an implementation), and the public ops: each checks
// its arguments here, once for every backend, then calls the backend's do_<op>.
#include "kernels/backend.h"

#include <initializer_list>
#include <utility>

#include "core/common/error.h"

namespace gptrain {

// kernels/cpu/cpu_backend.cpp; kernels/cuda/cuda_plugin.cpp (loads the CUDA backend's library).
std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);
std::unique_ptr<Backend> make_cuda_backend(DType compute_dtype, const BackendOptions& options);

std::size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::BF16: return 2;
    case DType::F16: return 2;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "fp32";
    case DType::BF16: return "bf16";
    case DType::F16: return "fp16";
  }
  return "?";
}

AttentionBackend parse_attention_backend(const std::string& s) {
  if (s == "auto") return AttentionBackend::Auto;
  if (s == "cudnn" || s == "fused") return AttentionBackend::Cudnn;  // "fused": Megatron's name for cuDNN's
  if (s == "flash") return AttentionBackend::Flash;
  if (s == "flash-fma") return AttentionBackend::FlashFma;
  fail("--attention-backend: got '{}', expected one of auto, cudnn (alias fused), flash, flash-fma", s);
}

const char* attention_backend_name(AttentionBackend a) {
  switch (a) {
    case AttentionBackend::Auto: return "auto";
    case AttentionBackend::Cudnn: return "cudnn";
    case AttentionBackend::Flash: return "flash";
    case AttentionBackend::FlashFma: return "flash-fma";
  }
  return "?";
}

std::unique_ptr<Backend> make_backend(const std::string& name, DType compute_dtype, const BackendOptions& options) {
  if (name == "cpu") {
    check(compute_dtype == DType::F32,
          "the cpu backend computes in fp32 only, {} was requested (drop --bf16/--fp16 or use the cuda backend)",
          dtype_name(compute_dtype));
    check(options.attention == AttentionBackend::Auto,
          "--attention-backend {}: the cpu backend has one attention implementation; use --attention-backend auto "
          "(or --device cuda)",
          attention_backend_name(options.attention));
    return make_cpu_backend(options);
  }
  if (name == "cuda") return make_cuda_backend(compute_dtype, options);
  fail("unknown backend '{}': expected 'cpu' or 'cuda'", name);
}

// ---- argument checks shared by the ops (one wording each: the op, what is wrong, the values) ----

namespace {

void check_sizes(const char* op, std::initializer_list<std::pair<const char*, long long>> sizes) {
  for (const auto& [name, value] : sizes) check(value >= 0, "{}: {}={} must not be negative", op, name, value);
}

void check_grouped_matmul(const char* op, const int32_t* chunk_rows, int E, int chunks, int IC, int OC) {
  check_sizes(op, {{"E", E}, {"IC", IC}, {"OC", OC}});
  check(chunks >= 1, "{}: chunks={} must be at least 1", op, chunks);
  for (int i = 0; i < E * chunks; ++i)
    check(chunk_rows[i] >= 0, "{}: chunk_rows[{}]={} (expert {}, chunk {}) must not be negative", op, i, chunk_rows[i],
          i / chunks, i % chunks);
}

// p and q are the same (non-null) buffer.
bool same(const void* p, const void* q) { return p != nullptr && p == q; }

void check_dropout_p(const char* op, float p) {
  check(p >= 0.0f && p < 1.0f, "{}: dropout probability {} is outside [0, 1)", op, p);
}

void check_heads(const char* op, int NH, int NKV, int HS) {
  check(NH >= 0 && NKV > 0 && NH % NKV == 0, "{}: NH={} query heads are not a multiple of NKV={} KV heads", op, NH,
        NKV);
  check(HS > 0, "{}: head size HS={} must be positive", op, HS);
}

void check_xent_columns(const char* op, int V_local, int V_valid_local) {
  check(V_valid_local >= 0 && V_valid_local <= V_local,
        "{}: V_valid_local={} valid columns is outside [0, V_local={}] (the columns of the shard)", op, V_valid_local,
        V_local);
}

// E experts, K of them per token: 1 <= K <= E.
void check_topk(const char* op, int E, int K) {
  check(E >= 1 && K >= 1 && K <= E, "{}: top-k K={} must be in [1, E={}] (the number of experts)", op, K, E);
}

// The load-balancing loss groups N tokens into `seqs` sequences of equal length.
void check_seqs(const char* op, int N, int seqs) {
  check(seqs >= 1 && N % seqs == 0, "{}: N={} tokens do not split into seqs={} sequences of equal length", op, N, seqs);
}

}  // namespace

// ---- embedding, norms ----

void Backend::embedding_forward(void* out, const int32_t* tokens, const int32_t* positions, const void* wte,
                                const void* wpe, int N, int C, int vocab_start, int V_local) {
  check_sizes("embedding_forward", {{"N", N}, {"C", C}, {"vocab_start", vocab_start}, {"V_local", V_local}});
  do_embedding_forward(out, tokens, positions, wte, wpe, N, C, vocab_start, V_local);
}

void Backend::embedding_backward(float* dwte, float* dwpe, const void* dout, const int32_t* tokens,
                                 const int32_t* positions, int N, int C, int vocab_start, int V_local) {
  check_sizes("embedding_backward", {{"N", N}, {"C", C}, {"vocab_start", vocab_start}, {"V_local", V_local}});
  do_embedding_backward(dwte, dwpe, dout, tokens, positions, N, C, vocab_start, V_local);
}

void Backend::layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight,
                                const void* bias, int N, int C, float eps, bool zero_centered_gamma) {
  check_sizes("layernorm_forward", {{"N", N}, {"C", C}});
  do_layernorm_forward(out, mean, rstd, inp, weight, bias, N, C, eps, zero_centered_gamma);
}

void Backend::layernorm_backward(void* dinp_acc, float* dweight, float* dbias, const void* dout, const void* inp,
                                 const void* weight, const float* mean, const float* rstd, int N, int C,
                                 bool zero_centered_gamma) {
  check_sizes("layernorm_backward", {{"N", N}, {"C", C}});
  do_layernorm_backward(dinp_acc, dweight, dbias, dout, inp, weight, mean, rstd, N, C, zero_centered_gamma);
}

void Backend::rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C, float eps,
                              bool zero_centered_gamma) {
  check_sizes("rmsnorm_forward", {{"N", N}, {"C", C}});
  do_rmsnorm_forward(out, rstd, inp, weight, N, C, eps, zero_centered_gamma);
}

void Backend::rmsnorm_backward(void* dinp_acc, float* dweight, const void* dout, const void* inp, const void* weight,
                               const float* rstd, int N, int C, bool zero_centered_gamma) {
  check_sizes("rmsnorm_backward", {{"N", N}, {"C", C}});
  do_rmsnorm_backward(dinp_acc, dweight, dout, inp, weight, rstd, N, C, zero_centered_gamma);
}

void Backend::residual_layernorm_forward(void* residual_out, void* norm_out, float* mean, float* rstd, const void* a,
                                         const void* b, const void* weight, const void* bias, int N, int C, float eps,
                                         bool zero_centered_gamma) {
  check_sizes("residual_layernorm_forward", {{"N", N}, {"C", C}});
  check(!same(norm_out, residual_out) && !same(norm_out, a) && !same(norm_out, b),
        "residual_layernorm_forward: norm_out must not alias residual_out, a or b");
  do_residual_layernorm_forward(residual_out, norm_out, mean, rstd, a, b, weight, bias, N, C, eps, zero_centered_gamma);
}

void Backend::residual_rmsnorm_forward(void* residual_out, void* norm_out, float* rstd, const void* a, const void* b,
                                       const void* weight, int N, int C, float eps, bool zero_centered_gamma) {
  check_sizes("residual_rmsnorm_forward", {{"N", N}, {"C", C}});
  check(!same(norm_out, residual_out) && !same(norm_out, a) && !same(norm_out, b),
        "residual_rmsnorm_forward: norm_out must not alias residual_out, a or b");
  do_residual_rmsnorm_forward(residual_out, norm_out, rstd, a, b, weight, N, C, eps, zero_centered_gamma);
}

// ---- linear, linear + GELU ----

void Backend::matmul_forward(void* out, const void* inp, const void* weight, const void* bias, int N, int IC, int OC) {
  check_sizes("matmul_forward", {{"N", N}, {"IC", IC}, {"OC", OC}});
  check(!same(out, inp) && !same(out, weight), "matmul_forward: out must not alias inp or weight");
  do_matmul_forward(out, inp, weight, bias, N, IC, OC);
}

void Backend::matmul_backward(void* dinp, float* dweight, float* dbias, const void* dout, const void* inp,
                              const void* weight, int N, int IC, int OC, bool accumulate_dinp) {
  check_sizes("matmul_backward", {{"N", N}, {"IC", IC}, {"OC", OC}});
  check(!same(dinp, dout) && !same(dinp, inp) && !same(dinp, weight),
        "matmul_backward: dinp must not alias dout, inp or weight");
  do_matmul_backward(dinp, dweight, dbias, dout, inp, weight, N, IC, OC, accumulate_dinp);
}

void Backend::matmul_bias_gelu_forward(void* out, void* pre_gelu, const void* inp, const void* weight, const void* bias,
                                       int N, int IC, int OC, GeluKind kind) {
  check_sizes("matmul_bias_gelu_forward", {{"N", N}, {"IC", IC}, {"OC", OC}});
  check(!same(out, pre_gelu) && !same(out, inp) && !same(pre_gelu, inp),
        "matmul_bias_gelu_forward: out, pre_gelu and inp must be distinct buffers");
  do_matmul_bias_gelu_forward(out, pre_gelu, inp, weight, bias, N, IC, OC, kind);
}

void Backend::matmul_dgelu_backward(void* dpre, float* dweight, float* dbias, const void* dout, const void* inp,
                                    const void* pre_gelu, const void* weight, int N, int IC, int OC, GeluKind kind) {
  check_sizes("matmul_dgelu_backward", {{"N", N}, {"IC", IC}, {"OC", OC}});
  check(!same(dpre, dout) && !same(dpre, inp) && !same(dpre, pre_gelu),
        "matmul_dgelu_backward: dpre must not alias dout, inp or pre_gelu");
  do_matmul_dgelu_backward(dpre, dweight, dbias, dout, inp, pre_gelu, weight, N, IC, OC, kind);
}

// ---- activations, elementwise ----

void Backend::gelu_forward(void* out, const void* inp, std::size_t n, GeluKind kind) {
  do_gelu_forward(out, inp, n, kind);
}

void Backend::gelu_backward(void* dinp, const void* inp, const void* dout, std::size_t n, GeluKind kind) {
  do_gelu_backward(dinp, inp, dout, n, kind);
}

void Backend::swiglu_forward(void* out, const void* inp, int N, int F) {
  check_sizes("swiglu_forward", {{"N", N}, {"F", F}});
  do_swiglu_forward(out, inp, N, F);
}

void Backend::swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F) {
  check_sizes("swiglu_backward", {{"N", N}, {"F", F}});
  do_swiglu_backward(dinp, inp, dout, N, F);
}

void Backend::add(void* out, const void* a, const void* b, std::size_t n) { do_add(out, a, b, n); }

void Backend::add_inplace(void* dst, const void* src, std::size_t n) { do_add_inplace(dst, src, n); }

void Backend::scale_inplace(float* x, float s, std::size_t n) { do_scale_inplace(x, s, n); }

// ---- dropout, rope, attention ----

void Backend::dropout_forward(void* out, const void* inp, std::size_t n, float p, uint64_t seed, uint64_t offset) {
  check_dropout_p("dropout_forward", p);
  do_dropout_forward(out, inp, n, p, seed, offset);
}

void Backend::dropout_backward(void* dinp, const void* dout, std::size_t n, float p, uint64_t seed, uint64_t offset) {
  check_dropout_p("dropout_backward", p);
  do_dropout_backward(dinp, dout, n, p, seed, offset);
}

void Backend::rope(void* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim, float base,
                   bool interleaved, bool inverse) {
  check_sizes("rope", {{"N", N}, {"NH", NH}, {"NKV", NKV}, {"HS", HS}});
  check(rotary_dim > 0 && rotary_dim % 2 == 0 && rotary_dim <= HS,
        "rope: rotary_dim={} must be even, positive and at most the head size HS={}", rotary_dim, HS);
  check(base > 0.0f, "rope: rotary base {} must be positive", base);
  do_rope(qkv, positions, N, NH, NKV, HS, rotary_dim, base, interleaved, inverse);
}

void Backend::attention_forward(void* out, float* lse, const void* qkv, const int32_t* segment_ids, int B, int T,
                                int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset) {
  check_sizes("attention_forward", {{"B", B}, {"T", T}});
  check_heads("attention_forward", NH, NKV, HS);
  check_dropout_p("attention_forward", dropout_p);
  do_attention_forward(out, lse, qkv, segment_ids, B, T, NH, NKV, HS, dropout_p, seed, offset);
}

void Backend::attention_backward(void* dqkv, const void* dout, const void* qkv, const void* out, const float* lse,
                                 const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                                 uint64_t seed, uint64_t offset) {
  check_sizes("attention_backward", {{"B", B}, {"T", T}});
  check_heads("attention_backward", NH, NKV, HS);
  check_dropout_p("attention_backward", dropout_p);
  do_attention_backward(dqkv, dout, qkv, out, lse, segment_ids, B, T, NH, NKV, HS, dropout_p, seed, offset);
}

// ---- mixture of experts ----

void Backend::moe_router_forward(float* probs, int32_t* experts, float* scores, const float* logits, int N, int E,
                                 int K, MoeScore score, bool pre_softmax) {
  check_sizes("moe_router_forward", {{"N", N}});
  check_topk("moe_router_forward", E, K);
  do_moe_router_forward(probs, experts, scores, logits, N, E, K, score, pre_softmax);
}

void Backend::moe_sinkhorn_router_forward(float* probs, int32_t* experts, float* normed, const float* logits, int N,
                                          int E, int K, bool train) {
  check_sizes("moe_sinkhorn_router_forward", {{"N", N}});
  check_topk("moe_sinkhorn_router_forward", E, K);
  do_moe_sinkhorn_router_forward(probs, experts, normed, logits, N, E, K, train);
}

void Backend::moe_router_backward(float* dlogits, const float* dprobs, const float* dscores, const float* logits,
                                  const int32_t* experts, int N, int E, int K, MoeScore score, bool pre_softmax) {
  check_sizes("moe_router_backward", {{"N", N}});
  check_topk("moe_router_backward", E, K);
  do_moe_router_backward(dlogits, dprobs, dscores, logits, experts, N, E, K, score, pre_softmax);
}

void Backend::moe_dispatch_plan(int32_t* dest_row, int32_t* segment_rows, const int32_t* experts, const float* probs,
                                int N, int E, int K, int capacity, MoeDropPolicy policy, bool pad_to_capacity) {
  check_sizes("moe_dispatch_plan", {{"N", N}});
  check_topk("moe_dispatch_plan", E, K);
  check(!pad_to_capacity || capacity >= 0,
        "moe_dispatch_plan: padding to capacity needs a capacity (got capacity={}, dropless)", capacity);
  do_moe_dispatch_plan(dest_row, segment_rows, experts, probs, N, E, K, capacity, policy, pad_to_capacity);
}

void Backend::moe_permute(void* out, const void* inp, const int32_t* dest_row, int N, int K, int C, int R) {
  check_sizes("moe_permute", {{"N", N}, {"K", K}, {"C", C}, {"R", R}});
  do_moe_permute(out, inp, dest_row, N, K, C, R);
}

void Backend::moe_permute_backward(void* dinp, const void* dout, const int32_t* dest_row, int N, int K, int C) {
  check_sizes("moe_permute_backward", {{"N", N}, {"K", K}, {"C", C}});
  check(!same(dinp, dout), "moe_permute_backward: dinp must not alias dout");
  do_moe_permute_backward(dinp, dout, dest_row, N, K, C);
}

void Backend::moe_unpermute(void* out, const void* inp, const float* probs, const int32_t* dest_row, int N, int K,
                            int C) {
  check_sizes("moe_unpermute", {{"N", N}, {"K", K}, {"C", C}});
  check(!same(out, inp), "moe_unpermute: out must not alias inp");
  do_moe_unpermute(out, inp, probs, dest_row, N, K, C);
}

void Backend::moe_unpermute_backward(void* dinp, float* dprobs, const void* dout, const void* inp, const float* probs,
                                     const int32_t* dest_row, int N, int K, int C, int R) {
  check_sizes("moe_unpermute_backward", {{"N", N}, {"K", K}, {"C", C}, {"R", R}});
  check(!same(dinp, dout) && !same(dinp, inp), "moe_unpermute_backward: dinp must not alias dout or inp");
  do_moe_unpermute_backward(dinp, dprobs, dout, inp, probs, dest_row, N, K, C, R);
}

void Backend::moe_grouped_matmul_forward(void* out, const void* inp, const void* weight, const int32_t* chunk_rows,
                                         int E, int chunks, int IC, int OC) {
  check_grouped_matmul("moe_grouped_matmul_forward", chunk_rows, E, chunks, IC, OC);
  do_moe_grouped_matmul_forward(out, inp, weight, chunk_rows, E, chunks, IC, OC);
}

void Backend::moe_grouped_matmul_backward(void* dinp, float* dweight, const void* dout, const void* inp,
                                          const void* weight, const int32_t* chunk_rows, int E, int chunks, int IC,
                                          int OC) {
  check_grouped_matmul("moe_grouped_matmul_backward", chunk_rows, E, chunks, IC, OC);
  do_moe_grouped_matmul_backward(dinp, dweight, dout, inp, weight, chunk_rows, E, chunks, IC, OC);
}

void Backend::moe_load_balancing_loss(float* loss, const float* scores, const int32_t* experts, int N, int E, int K,
                                      int seqs, float coeff) {
  check_topk("moe_load_balancing_loss", E, K);
  check_seqs("moe_load_balancing_loss", N, seqs);
  do_moe_load_balancing_loss(loss, scores, experts, N, E, K, seqs, coeff);
}

void Backend::moe_load_balancing_loss_backward(float* dscores, const int32_t* experts, int N, int E, int K, int seqs,
                                               float coeff_times_dloss) {
  check_topk("moe_load_balancing_loss_backward", E, K);
  check_seqs("moe_load_balancing_loss_backward", N, seqs);
  do_moe_load_balancing_loss_backward(dscores, experts, N, E, K, seqs, coeff_times_dloss);
}

void Backend::moe_z_loss(float* loss, const float* logits, int N, int E, float coeff) {
  check_sizes("moe_z_loss", {{"N", N}});
  check(E >= 1, "moe_z_loss: E={} experts must be at least 1", E);
  do_moe_z_loss(loss, logits, N, E, coeff);
}

void Backend::moe_z_loss_backward(float* dlogits_acc, const float* logits, int N, int E, float coeff_times_dloss) {
  check_sizes("moe_z_loss_backward", {{"N", N}});
  check(E >= 1, "moe_z_loss_backward: E={} experts must be at least 1", E);
  do_moe_z_loss_backward(dlogits_acc, logits, N, E, coeff_times_dloss);
}

// ---- cross-entropy, optimizer ----

void Backend::xent_stats(XentStats stats, const void* logits, const int32_t* targets, int N, int V_local,
                         int V_valid_local, int vocab_start) {
  check_sizes("xent_stats", {{"N", N}, {"V_local", V_local}, {"vocab_start", vocab_start}});
  check_xent_columns("xent_stats", V_local, V_valid_local);
  do_xent_stats(stats, logits, targets, N, V_local, V_valid_local, vocab_start);
}

void Backend::xent_backward(void* dlogits, const void* logits, const int32_t* targets, const float* row_max,
                            const float* row_sumexp, const float* dloss, int N, int V_local, int V_valid_local,
                            int vocab_start) {
  check_sizes("xent_backward", {{"N", N}, {"V_local", V_local}, {"vocab_start", vocab_start}});
  check_xent_columns("xent_backward", V_local, V_valid_local);
  do_xent_backward(dlogits, logits, targets, row_max, row_sumexp, dloss, N, V_local, V_valid_local, vocab_start);
}

void Backend::xent_loss(float* losses, XentStats stats, int N) {
  check_sizes("xent_loss", {{"N", N}});
  do_xent_loss(losses, stats, N);
}

void Backend::adamw_update(float* master, void* model_param, const float* grad, float* m, float* v, std::size_t n,
                           float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                           float grad_scale) {
  check(step >= 1, "adamw_update: step {} must be >= 1 (bias correction)", step);
  do_adamw_update(master, model_param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, step, grad_scale);
}

double Backend::sum_squares(const float* x, std::size_t n) { return do_sum_squares(x, n); }

}  // namespace gptrain
