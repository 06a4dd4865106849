// The op interface: every op the transformer needs, forward and backward, behind one abstract class,
// and make_backend, the one way to get an implementation: "cpu" (kernels/cpu/: fp32, OpenMP, OpenBLAS,
// the reference) or "cuda" (kernels/cuda/ and the op folders' *.cu). The model in core/ calls only
// this, so CPU tests prove the same maths the GPU runs. Plain C++: includable without the CUDA toolkit.
//
// Conventions
// - Pointers are the backend's memory (host memory for CPU, device memory for CUDA).
// - `void*` tensors ("act") hold the backend's compute dtype: fp32 on CPU; fp32, bf16 or fp16 on CUDA.
//   Model parameters (the copy the forward reads) are act. `float*` tensors are always fp32:
//   parameter gradients (main grads, as Megatron), master weights, Adam moments, norm statistics,
//   losses, cross-entropy row statistics.
// - N = B*T rows. Linear weights are (out, in) row-major, as torch.nn.Linear: y = x W^T + b.
// - Parameter-gradient outputs (dw, db, dwte, ...) ACCUMULATE (+=), so gradient accumulation over
//   micro-batches and tied weights need no extra pass. Input-gradient outputs (dinp, dqkv, ...) are
//   written (=) unless the argument is named *_acc, which accumulates.
// - Nullable arguments say so; a null bias means "no bias".
// - Every op is deterministic for fixed inputs (no atomics-order dependence in the reference twin).
// - The ops are non-virtual: each checks its arguments once, for every backend (kernels/backend.cpp:
//   sizes, divisibility, probabilities, aliasing), throwing gptrain::Error that names the op and the
//   values, then calls the backend's do_<op> with the same parameters. A limit of one backend alone
//   (the CUDA flash kernels' head size, cuDNN's cases) is checked there and says which backend it is.
//
// The op list: the ops are not spelled out in this file but in kernels/ops.inc, one entry per op with
// its documentation (shapes, = or +=, nullable and aliasing arguments), its parameters and its argument
// checks; read that file as the op part of this class. An entry `GPTRAIN_OP(void, foo, (params), (args),
// checks)` declares here the public `void foo(params)` and the protected `virtual void do_foo(params) = 0`;
// backend.cpp defines foo (the checks, then do_foo), and the backends declare their do_foo overrides
// from the same entry.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "kernels/allocation_counter.h"
#include "kernels/rope/rope_scaling.h"

namespace gptrain {

enum class DType : uint8_t { F32 = 0, BF16 = 1, F16 = 2 };
std::size_t dtype_size(DType t);
const char* dtype_name(DType t);

enum class GeluKind : uint8_t { Tanh = 0, Erf = 1 };

// The two FP8 formats of FP8 training (kernels/fp8/fp8_math.h): E4M3 for forward tensors, E5M2 (more
// range, less precision) for gradients under Megatron's "hybrid" format.
enum class Fp8Kind : uint8_t { E4M3 = 0, E5M2 = 1 };

// Mixture of experts: the router's score function (--moe-router-score-function) and which tokens an
// expert over capacity drops (--moe-token-drop-policy).
enum class MoeScore : uint8_t { Softmax = 0, Sigmoid = 1 };
enum class MoeDropPolicy : uint8_t { Probs = 0, Position = 1 };
// What changes the router's choice of experts but not the probabilities of the chosen (Megatron's
// topk_routing_with_score_function): expert_bias (E, fp32, nullable: --moe-router-enable-expert-bias) is
// added to the sigmoid scores for the choice only; num_groups > 0 limits the choice to the group_topk
// groups of E / num_groups consecutive experts whose top-(K / group_topk) choice scores sum highest
// (--moe-router-num-groups / --moe-router-group-topk).
struct MoeChoice {
  const float* expert_bias = nullptr;
  int num_groups = 0;
  int group_topk = 0;
};
constexpr int kMoeMaxGroups = 64;  // the group mask of a row is one 64-bit word

// Per-row loss bookkeeping for the (vocab-parallel-ready) fused softmax + cross-entropy.
// The stats op reads a shard of the logits columns; combine_xent_stats (in the model, or the TP
// wrapper across ranks) merges shards; backward reads the logits once more and writes dlogits.
struct XentStats {
  float* row_max;       // (N) max logit of the row (over the valid columns seen so far)
  float* row_sumexp;    // (N) sum exp(logit - row_max)
  float* target_logit;  // (N) logit of the target column, 0 on shards that do not hold it
};

// Adam moments in their storage dtypes (--exp-avg-dtype, --exp-avg-sq-dtype): F32 (float) or BF16 (16-bit
// patterns, rounded to nearest even on every store).
struct AdamWMoments {
  void* m;
  DType m_dtype;
  void* v;
  DType v_dtype;
};

// The random stream of a stochastically rounded AdamW call (--bf16-stochastic-rounding,
// kernels/adamw/adamw_math.h): element k of the call draws its bits at global index
// base + (i / chunk_local) * chunk_global + i % chunk_local, i = first + k, of tensor tensor_key (the
// call's step is the optimizer step).
struct StochasticRounding {
  uint64_t seed = 0;
  uint32_t tensor_key = 0;
  uint64_t first = 0, base = 0, chunk_local = 1, chunk_global = 1;
};

// Which of a layer's query heads an attention call holds: its head h is the layer's head first + h of
// `total` (tensor parallelism gives each rank a contiguous share; total 0: the call holds them all).
// Attention dropout indexes its mask by the layer's head, so a TP rank drops what one process drops.
struct HeadSlice {
  int first = 0;
  int total = 0;
};

// Context parallelism (--context-parallel-size, Megatron's load-balanced layout): a sequence of
// T = 2 * cp * chunk positions is cut into 2 * cp chunks and CP rank r holds chunks r and 2 * cp - 1 - r,
// back to back (its 2 * chunk local rows). An attention block is the queries of rank q_rank against the
// keys and values of rank kv_rank, causal by global position (kernels/attention/attention_block_math.h).
struct AttentionBlock {
  int chunk = 0;
  int cp = 1;
  int q_rank = 0;
  int kv_rank = 0;
};

// Which kernels run attention_forward/backward on CUDA (--attention-backend).
//   auto:  cuDNN fused attention when the cuDNN version and the shape support it, else flash
//   cudnn: cuDNN fused attention (graph API) forward and backward; a case the forward cannot run is an
//          error, a limit of the backward graph alone falls back to the flash backward (one info line)
//   flash: gptrain's own flash-attention kernels: tensor cores (attention_tc.cu) for bf16/fp16 with
//          head size 64 or 128, the FMA kernels (attention.cu) otherwise
//   flash-fma: always the own FMA kernels (debugging and comparison)
// The cpu backend has one attention implementation and takes auto only.
enum class AttentionBackend : uint8_t { Auto = 0, Cudnn = 1, Flash = 2, FlashFma = 3 };
// Parses "auto" | "cudnn" (or Megatron's "fused") | "flash" | "flash-fma"; throws gptrain::Error naming the
// accepted values otherwise.
AttentionBackend parse_attention_backend(const std::string& s);
const char* attention_backend_name(AttentionBackend a);

// How a backend runs, given to make_backend (Backend::options() returns the ones in effect).
struct BackendOptions {
  AttentionBackend attention = AttentionBackend::Auto;  // --attention-backend
  // --deterministic-mode: same bits run to run, no order-dependent reductions anywhere (on CUDA: no
  // cuBLASLt split-K reduced in place, the cuDNN attention backward only from engines without the
  // NONDETERMINISTIC note, else flash). The cpu backend always is.
  bool deterministic = false;
  int device = 0;  // GPU index for the CUDA backend (the caller picks it from the local rank)
};

// Free and total memory of the backend's device (cudaMemGetInfo), for the memory plan's fit check.
struct DeviceMemory {
  std::size_t free = 0, total = 0;
};

// Bytes of device scratch a backend holds now: cuBLASLt's workspace, the capacity of the CUDA backend's
// grow-only Workspace and of cuDNN attention's Workspace (plan workspaces included). The GPU test
// compares them with the memory plan's estimate (parallel/plan/backend_workspace.h). Zeros on CPU.
struct BackendScratch {
  std::size_t gemm = 0, scratch = 0, attention = 0;
  std::size_t attention_plan_max = 0;  // the largest cuDNN plan workspace requested (inside `attention`)
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  virtual const char* name() const = 0;  // "cpu" | "cuda"
  virtual DType compute_dtype() const = 0;
  // The options this backend runs with.
  const BackendOptions& options() const { return options_; }
  // Free and total memory of the device; std::nullopt on CPU. Throws gptrain::Error when the query fails.
  virtual std::optional<DeviceMemory> device_memory() const = 0;
  // Device scratch held now (see BackendScratch); zeros on CPU.
  virtual BackendScratch scratch_bytes() const = 0;
  // What alloc holds now and at most (requested bytes, before any rounding), and the live allocations
  // (--log-memory-to-tensorboard's mem-* scalars).
  AllocatedBytes allocated_bytes() const { return allocations_.totals(); }

  // ---- memory (one arena per kind of state is carved out of a few large allocations) ----
  virtual void* alloc(std::size_t bytes) = 0;
  virtual void release(void* p) = 0;
  virtual void copy_to_device(void* dst, const void* host_src, std::size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* src, std::size_t bytes) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void fill_zero(void* p, std::size_t bytes) = 0;
  virtual void synchronize() = 0;
  // Element conversion between dtypes (fp32 master <-> compute copy, checkpoint I/O).
  virtual void convert(void* dst, DType dst_t, const void* src, DType src_t, std::size_t n) = 0;

  // Whether fp8_gemm takes these operands here: the CUDA backend's limits (compute capability 8.9+, M, N, K
  // multiples of 16, 16-byte aligned pointers); the CPU backend takes any. FP8 training dequantises its
  // operands for the ordinary GEMM where not (core/model/fp8_linear.h).
  virtual bool fp8_gemm_accepts(const void* out, const void* a, const void* b, int M, int N, int K) const {
    (void)out, (void)a, (void)b, (void)M, (void)N, (void)K;
    return true;
  }
  // Whether fp8_gemm_accepts may say no on this backend (then FP8 training holds that fallback's scratch).
  virtual bool fp8_gemm_limited() const { return false; }

  // ---- the ops, declared from the op list (kernels/ops.inc: their documentation) ----
#define GPTRAIN_OP_DEFAULT(value) = value
#define GPTRAIN_OP(ret, name, params, args, ...) ret name params;
#include "kernels/ops.inc"

 protected:
  explicit Backend(const BackendOptions& options) : options_(options) {}
  BackendOptions& mutable_options() { return options_; }
  // alloc and release of every backend report here.
  AllocationCounter& allocations() { return allocations_; }

  // The implementations of the ops above, called after their arguments were checked (kernels/backend.cpp),
  // with the same parameters. A backend overrides these only, and checks only its own limits.
#define GPTRAIN_OP(ret, name, params, args, ...) virtual ret do_##name params = 0;
#include "kernels/ops.inc"

 private:
  BackendOptions options_;
  AllocationCounter allocations_;
};

// "cpu" (always built; fp32 only, attention Auto only) or "cuda" (built with GPTRAIN_HAVE_CUDA, otherwise
// an Error saying so; opens GPU options.device and applies options.attention and options.deterministic).
std::unique_ptr<Backend> make_backend(const std::string& name, DType compute_dtype, const BackendOptions& options = {});

// GPUs visible to this process, without opening one; 0 in a build without CUDA or with no usable driver.
int cuda_device_count();

}  // namespace gptrain
