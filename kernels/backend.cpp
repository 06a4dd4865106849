// The backend-neutral part of kernels/backend.h: dtype helpers, --attention-backend values (the same in
// CUDA and CPU-only builds, so the flag parses the same everywhere), make_backend (the one place that
// maps a backend name, compute dtype and options to an implementation), and the public ops: each runs the
// argument checks of its entry in the op list (kernels/ops.inc) here, once for every backend, then calls
// the backend's do_<op>.
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

// ---- argument checks the op list uses (one wording each: the op, what is wrong, the values) ----

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

void check_head_slice(const char* op, int NH, HeadSlice heads) {
  check(heads.total == 0 || (heads.first >= 0 && heads.first <= heads.total - NH),
        "{}: heads {}..{} of the call are outside the layer's {} heads", op, heads.first, heads.first + NH - 1,
        heads.total);
}

void check_attention_block(const char* op, AttentionBlock b) {
  check(b.chunk >= 1 && b.cp >= 1 && b.q_rank >= 0 && b.q_rank < b.cp && b.kv_rank >= 0 && b.kv_rank < b.cp,
        "{}: block chunk={} cp={} q_rank={} kv_rank={}: expected chunk >= 1 and ranks in [0, cp)", op, b.chunk, b.cp,
        b.q_rank, b.kv_rank);
}

// The sliding window: keys t - window .. t (Megatron's --window-size (window, 0)); -1 is unlimited.
void check_window(const char* op, int window) {
  check(window >= -1, "{}: window={} must be -1 (unlimited) or the number of earlier keys a query sees (>= 0)", op,
        window);
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

void check_jitter_eps(const char* op, float eps) {
  check(eps >= 0.0f && eps < 1.0f, "{}: eps={} must be in [0, 1)", op, eps);
}

// The group limit must split the experts evenly into at most kMoeMaxGroups groups whose chosen ones hold K
// experts; the expert bias is added to sigmoid scores only.
void check_moe_choice(const char* op, int E, int K, MoeScore score, const MoeChoice& c) {
  check(c.expert_bias == nullptr || score == MoeScore::Sigmoid, "{}: the expert bias needs the sigmoid score", op);
  if (c.num_groups <= 0) return;
  check(c.num_groups <= kMoeMaxGroups && E % c.num_groups == 0, "{}: num_groups={} must divide E={} and be at most {}",
        op, c.num_groups, E, kMoeMaxGroups);
  check(c.group_topk >= 1 && c.group_topk <= c.num_groups && c.group_topk <= K &&
            int64_t(c.group_topk) * (E / c.num_groups) >= K,
        "{}: group_topk={} must be in [1, min(num_groups={}, K={})] and its groups must hold K experts", op,
        c.group_topk, c.num_groups, K);
}

// The load-balancing loss groups N tokens into `seqs` sequences of equal length.
void check_seqs(const char* op, int N, int seqs) {
  check(seqs >= 1 && N % seqs == 0, "{}: N={} tokens do not split into seqs={} sequences of equal length", op, N, seqs);
}

}  // namespace

// ---- the ops (kernels/ops.inc): each runs its entry's checks, then the backend's do_<op> ----

#define GPTRAIN_OP(ret, name, params, args, ...)       \
  ret Backend::name params {                           \
    [[maybe_unused]] constexpr const char* op = #name; \
    __VA_ARGS__                                        \
    return do_##name args;                             \
  }
#include "kernels/ops.inc"

}  // namespace gptrain
