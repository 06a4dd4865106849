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
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace gptrain {

enum class DType : uint8_t { F32 = 0, BF16 = 1, F16 = 2 };
std::size_t dtype_size(DType t);
const char* dtype_name(DType t);

enum class GeluKind : uint8_t { Tanh = 0, Erf = 1 };

// Mixture of experts: the router's score function (--moe-router-score-function) and which tokens an
// expert over capacity drops (--moe-token-drop-policy).
enum class MoeScore : uint8_t { Softmax = 0, Sigmoid = 1 };
enum class MoeDropPolicy : uint8_t { Probs = 0, Position = 1 };

// Per-row loss bookkeeping for the (vocab-parallel-ready) fused softmax + cross-entropy.
// The stats op reads a shard of the logits columns; combine_xent_stats (in the model, or the TP
// wrapper across ranks) merges shards; backward reads the logits once more and writes dlogits.
struct XentStats {
  float* row_max;       // (N) max logit of the row (over the valid columns seen so far)
  float* row_sumexp;    // (N) sum exp(logit - row_max)
  float* target_logit;  // (N) logit of the target column, 0 on shards that do not hold it
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
// compares them with the memory plan's estimate (core/train/backend_workspace.h). Zeros on CPU.
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

  // ---- embedding: out[i] = wte[tokens[i] - vocab_start] + wpe[positions[i]] ----
  // wte holds rows [vocab_start, vocab_start + V_local) of the (padded) vocabulary; tokens outside
  // that range contribute zero (vocab-parallel embedding: the TP wrapper sums over ranks).
  // wpe is null for rope/none position embeddings.
  void embedding_forward(void* out,                 // (N, C)
                         const int32_t* tokens,     // (N)
                         const int32_t* positions,  // (N)
                         const void* wte,           // (V_local, C)
                         const void* wpe,           // (P, C) or null
                         int N, int C, int vocab_start, int V_local);
  void embedding_backward(float* dwte,       // (V_local, C) +=
                          float* dwpe,       // (P, C) += or null
                          const void* dout,  // (N, C)
                          const int32_t* tokens, const int32_t* positions, int N, int C, int vocab_start, int V_local);

  // ---- LayerNorm / RMSNorm over the last dim C ----
  // zero_centered_gamma (Megatron's --apply-layernorm-1p): `weight` stores gamma - 1 and the norm scales by
  // (1 + weight), taken in fp32; dweight is then the gradient of gamma, which equals that of the stored weight.
  void layernorm_forward(void* out, float* mean, float* rstd,                    // (N, C), (N), (N)
                         const void* inp, const void* weight, const void* bias,  // bias nullable
                         int N, int C, float eps, bool zero_centered_gamma = false);
  void layernorm_backward(void* dinp_acc,                // (N, C) +=
                          float* dweight, float* dbias,  // (C) +=, dbias nullable
                          const void* dout, const void* inp, const void* weight, const float* mean, const float* rstd,
                          int N, int C, bool zero_centered_gamma = false);
  void rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C, float eps,
                       bool zero_centered_gamma = false);
  void rmsnorm_backward(void* dinp_acc, float* dweight, const void* dout, const void* inp, const void* weight,
                        const float* rstd, int N, int C, bool zero_centered_gamma = false);

  // ---- residual add fused with the norm that reads it (pre-norm blocks) ----
  // A pre-norm transformer updates the residual stream and at once normalizes it for the next sublayer
  // (the MLP's norm, the next layer's input norm, the final norm): one pass instead of add() + *_forward().
  //   residual_out = a + b   (rounded to the compute dtype once, exactly as add())
  //   norm_out     = LayerNorm(residual_out) / RMSNorm(residual_out)  (statistics of the rounded sum)
  // The results equal add() followed by layernorm_forward() / rmsnorm_forward(). residual_out may alias
  // a or b (in-place update of the stream); norm_out aliases nothing.
  // Backward: d(residual_out) and d(norm_out) both reach a and b unchanged, so the backward is the norm's
  // own backward with the residual-stream gradient as the accumulator: layernorm_backward(dinp_acc =
  // dresidual, ...) adds the norm's input gradient onto the stream in the same pass (no extra op needed).
  void residual_layernorm_forward(void* residual_out,                    // (N, C)
                                  void* norm_out,                        // (N, C)
                                  float* mean, float* rstd,              // (N), (N)
                                  const void* a, const void* b,          // (N, C) each
                                  const void* weight, const void* bias,  // (C), bias nullable
                                  int N, int C, float eps, bool zero_centered_gamma = false);
  void residual_rmsnorm_forward(void* residual_out, void* norm_out, float* rstd,   // (N, C), (N, C), (N)
                                const void* a, const void* b, const void* weight,  // (N, C), (N, C), (C)
                                int N, int C, float eps, bool zero_centered_gamma = false);

  // ---- linear: out = inp W^T (+ bias) ----
  void matmul_forward(void* out,           // (N, OC)
                      const void* inp,     // (N, IC)
                      const void* weight,  // (OC, IC)
                      const void* bias,    // (OC) nullable
                      int N, int IC, int OC);
  // dinp (=, or += when accumulate_dinp), dweight +=, dbias += (nullable). dinp may be null.
  void matmul_backward(void* dinp, float* dweight, float* dbias, const void* dout, const void* inp, const void* weight,
                       int N, int IC, int OC, bool accumulate_dinp);

  // ---- linear fused with GELU (the GELU MLP: fc1 + activation forward, fc2 backward into fc1) ----
  // pre_gelu = inp W^T (+ bias), out = gelu(pre_gelu); pre_gelu is kept for the backward. The values
  // are those of matmul_forward() then gelu_forward() (the CUDA backend may compute the GELU from the
  // fp32 accumulator in a cuBLASLt epilogue: equal within the compute dtype's rounding).
  void matmul_bias_gelu_forward(void* out,           // (N, OC) gelu(pre_gelu)
                                void* pre_gelu,      // (N, OC) pre-activation
                                const void* inp,     // (N, IC)
                                const void* weight,  // (OC, IC)
                                const void* bias,    // (OC) nullable
                                int N, int IC, int OC, GeluKind kind);
  // Backward of y = gelu(pre) W^T (+ b), the linear that reads a GELU output (fc2), through the GELU:
  //   dpre (N, IC) = gelu'(pre) * (dout W)                 (=; the gradient of fc1's output)
  //   dweight (OC, IC) += dout^T gelu(pre), dbias (OC) += column sums of dout (nullable)
  // `inp` is gelu(pre) as the forward saved it; dpre aliases no other argument.
  // The values are those of matmul_backward() (dinp =) then gelu_backward() in place.
  void matmul_dgelu_backward(void* dpre,            // (N, IC)
                             float* dweight,        // (OC, IC) +=
                             float* dbias,          // (OC) += or null
                             const void* dout,      // (N, OC)
                             const void* inp,       // (N, IC) gelu(pre)
                             const void* pre_gelu,  // (N, IC)
                             const void* weight,    // (OC, IC)
                             int N, int IC, int OC, GeluKind kind);

  // ---- activations (elementwise; in-place allowed: out == inp, dinp == dout) ----
  void gelu_forward(void* out, const void* inp, std::size_t n, GeluKind kind);
  void gelu_backward(void* dinp, const void* inp, const void* dout, std::size_t n, GeluKind kind);
  // SwiGLU: inp (N, 2F) = [gate | up] per row, out (N, F) = silu(gate) * up.
  void swiglu_forward(void* out, const void* inp, int N, int F);
  void swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F);

  // ---- residual and elementwise helpers ----
  void add(void* out, const void* a, const void* b, std::size_t n);  // out = a + b
  void add_inplace(void* dst, const void* src, std::size_t n);       // dst += src
  void scale_inplace(float* x, float s, std::size_t n);              // x *= s (fp32)

  // ---- dropout with a counter-based RNG: element i of call (seed, offset) is kept iff
  // philox(seed, offset + i) >= p; kept values are scaled by 1/(1-p). Backward regenerates the mask.
  void dropout_forward(void* out, const void* inp, std::size_t n, float p, uint64_t seed, uint64_t offset);
  void dropout_backward(void* dinp, const void* dout, std::size_t n, float p, uint64_t seed, uint64_t offset);

  // ---- rotary position embedding, in place on the Q and K heads of a qkv buffer ----
  // qkv (N, (NH + 2*NKV) * HS) laid out [Q heads | K heads | V heads]; the first rotary_dim dims of
  // each head are rotated; interleaved pairs (2i, 2i+1) (GPT-J) or half-split (i, i + rotary_dim/2)
  // (NeoX/Llama). inverse=true applies the transpose rotation (the backward of forward).
  void rope(void* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim, float base,
            bool interleaved, bool inverse);

  // ---- causal self-attention, flash-style: saves only the per-row logsumexp ----
  // qkv (B, T, (NH + 2*NKV) * HS) [Q | K | V]; out (B, T, NH * HS); lse (B, NH, T) fp32.
  // Query head h attends with KV head h / (NH / NKV) (GQA). Scale 1/sqrt(HS).
  // segment_ids (B, T) nullable: when given, position t attends only to keys of its own segment
  // (--reset-attention-mask). Attention dropout on the probabilities with the dropout RNG above,
  // element index ((b*NH + h)*T + t)*T + s.
  void attention_forward(void* out, float* lse, const void* qkv, const int32_t* segment_ids, int B, int T, int NH,
                         int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset);
  void attention_backward(void* dqkv, const void* dout, const void* qkv, const void* out, const float* lse,
                          const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                          uint64_t seed, uint64_t offset);

  // ---- fused softmax + cross-entropy over a shard of vocabulary columns ----
  // logits (N, V_local) hold global columns [vocab_start, vocab_start + V_local); only the first
  // V_valid_local of them are real tokens (the rest is vocab padding and never wins or gets mass).
  void xent_stats(XentStats stats, const void* logits, const int32_t* targets, int N, int V_local, int V_valid_local,
                  int vocab_start);
  // dlogits (may alias logits) = (softmax(logits) - onehot(target)) * dloss[row]; padding columns get 0.
  // row_max/row_sumexp are the combined (global) statistics; dloss (N) fp32 carries the loss mask,
  // 1/num_tokens and the loss scale.
  void xent_backward(void* dlogits, const void* logits, const int32_t* targets, const float* row_max,
                     const float* row_sumexp, const float* dloss, int N, int V_local, int V_valid_local,
                     int vocab_start);
  // losses[i] = log(row_sumexp[i]) + row_max[i] - target_logit[i]
  void xent_loss(float* losses, XentStats stats, int N);

  // ---- mixture of experts (kernels/moe/moe.h: the design, the permuted-buffer layout, capacity) ----
  // Router: logits (N, E) fp32 -> probs (N, K), experts (N, K) (the top-k, decreasing score, ties to the
  // lower expert) and scores (N, E), the full-distribution scores the load-balancing loss reads (softmax,
  // or sigmoid normalised over E). score Softmax: pre_softmax=false takes the softmax over the k chosen
  // logits (Megatron's default, equal to Mixtral's), true the top-k of the softmax over all E (not
  // renormalised). Sigmoid: the chosen sigmoids, normalised over the k when K > 1 (pre_softmax unused).
  void moe_router_forward(float* probs, int32_t* experts, float* scores,  // (N, K), (N, K), (N, E)
                          const float* logits, int N, int E, int K, MoeScore score, bool pre_softmax);
  // dlogits (N, E) = gradient through probs (dprobs (N, K)) and scores (dscores (N, E), nullable), the
  // choice of experts held fixed.
  void moe_router_backward(float* dlogits, const float* dprobs, const float* dscores, const float* logits,
                           const int32_t* experts, int N, int E, int K, MoeScore score, bool pre_softmax);
  // Sinkhorn routing (Megatron's sinkhorn_load_balancing): experts (N, K) = the top-k of sinkhorn(logits)
  // when train (normed (N, E) receives that normalised matrix), of the logits otherwise (normed unused);
  // probs (N, K) = sigmoid of the chosen logits when K = 1, softmax over all E at them when K > 1. The
  // backward is moe_router_backward with score moe_sinkhorn_score(K), pre_softmax true (moe_math.h).
  void moe_sinkhorn_router_forward(float* probs, int32_t* experts, float* normed,  // (N, K), (N, K), (N, E)
                                   const float* logits, int N, int E, int K, bool train);
  // The dispatch plan: dest_row (N, K) = the permuted-buffer row of choice (n, k), -1 when dropped;
  // segment_rows (E) = rows of each expert's segment. capacity < 0: dropless; else moe_expert_capacity()
  // and the policy decide which choices an expert keeps; pad_to_capacity makes every segment
  // min(capacity, N) rows. probs: the router's (N, K) (policy Probs ranks by them).
  void moe_dispatch_plan(int32_t* dest_row, int32_t* segment_rows, const int32_t* experts, const float* probs, int N,
                         int E, int K, int capacity, MoeDropPolicy policy, bool pad_to_capacity);
  // out (R, C) = token rows of inp (N, C) at dest_row, rows nobody targets zero (padding).
  void moe_permute(void* out, const void* inp, const int32_t* dest_row, int N, int K, int C, int R);
  // dinp (N, C) = sum over the kept choices k of dout[dest_row[n, k]] (=).
  void moe_permute_backward(void* dinp, const void* dout, const int32_t* dest_row, int N, int K, int C);
  // out (N, C) = sum over the kept choices k of probs[n, k] * inp[dest_row[n, k]] (=; 0 for a token
  // whose choices were all dropped).
  void moe_unpermute(void* out, const void* inp, const float* probs, const int32_t* dest_row, int N, int K, int C);
  // dinp (R, C) = probs * dout at the kept rows, 0 elsewhere (=); dprobs (N, K) = <dout[n], inp[row]>, 0
  // for dropped choices (=).
  void moe_unpermute_backward(void* dinp, float* dprobs, const void* dout, const void* inp, const float* probs,
                              const int32_t* dest_row, int N, int K, int C, int R);
  // out (R, OC) = expert e's rows of inp (R, IC) times weight[e]^T, weight (E, OC, IC). Expert e's rows
  // are `chunks` consecutive chunks, chunk_rows (E, chunks) in HOST memory on every backend (R = its
  // sum); each chunk is its own GEMM for the output and dinp, so a row's bits depend only on its chunk
  // (expert parallelism passes one chunk per source rank: the results then do not depend on the EP size).
  // Backward: dinp (R, IC) =, dweight (E, OC, IC) += (one GEMM over all the expert's rows).
  void moe_grouped_matmul_forward(void* out, const void* inp, const void* weight, const int32_t* chunk_rows, int E,
                                  int chunks, int IC, int OC);
  void moe_grouped_matmul_backward(void* dinp, float* dweight, const void* dout, const void* inp, const void* weight,
                                   const int32_t* chunk_rows, int E, int chunks, int IC, int OC);
  // Megatron's load-balancing loss over `seqs` sequences of S = N / seqs tokens (token n = b * S + s):
  //   loss[0] = coeff * E / (K * S * S * seqs) * sum_b sum_e (sum_s scores[b, s, e]) * count[b, e]
  // count[b, e] = tokens of sequence b with e among their top-k. seqs = 1 is --moe-router-load-balancing-type
  // aux_loss, seqs = B seq_aux_loss. Backward: dscores (N, E) = dloss * d loss / d scores (=).
  void moe_load_balancing_loss(float* loss, const float* scores, const int32_t* experts, int N, int E, int K, int seqs,
                               float coeff);
  void moe_load_balancing_loss_backward(float* dscores, const int32_t* experts, int N, int E, int K, int seqs,
                                        float coeff_times_dloss);
  // z-loss: loss[0] = coeff * mean over tokens of logsumexp(logits[n])^2. Backward: dlogits_acc +=.
  void moe_z_loss(float* loss, const float* logits, int N, int E, float coeff);
  void moe_z_loss_backward(float* dlogits_acc, const float* logits, int N, int E, float coeff_times_dloss);

  // ---- optimizer ----
  // Fused AdamW (decoupled weight decay, bias correction with step >= 1) over a contiguous range:
  // g = grad * grad_scale; m,v updated; master -= lr * (mhat/(sqrt(vhat)+eps) + wd * master);
  // model_param (nullable) receives master converted to the compute dtype in the same pass.
  void adamw_update(float* master, void* model_param, const float* grad, float* m, float* v, std::size_t n, float lr,
                    float beta1, float beta2, float eps, float weight_decay, int step, float grad_scale);
  // Sum of squares of x in fp64 accumulation (global grad norm: the caller sums over ranks/ranges).
  // Returns +inf/NaN when x holds a non-finite value (fp16 overflow check).
  double sum_squares(const float* x, std::size_t n);

 protected:
  explicit Backend(const BackendOptions& options) : options_(options) {}
  BackendOptions& mutable_options() { return options_; }

  // The implementations of the ops above, called after their arguments were checked (kernels/backend.cpp),
  // with the same parameters. A backend overrides these only, and checks only its own limits.
  virtual void do_embedding_forward(void* out, const int32_t* tokens, const int32_t* positions, const void* wte,
                                    const void* wpe, int N, int C, int vocab_start, int V_local) = 0;
  virtual void do_embedding_backward(float* dwte, float* dwpe, const void* dout, const int32_t* tokens,
                                     const int32_t* positions, int N, int C, int vocab_start, int V_local) = 0;
  virtual void do_layernorm_forward(void* out, float* mean, float* rstd, const void* inp, const void* weight,
                                    const void* bias, int N, int C, float eps, bool zero_centered_gamma) = 0;
  virtual void do_layernorm_backward(void* dinp_acc, float* dweight, float* dbias, const void* dout, const void* inp,
                                     const void* weight, const float* mean, const float* rstd, int N, int C,
                                     bool zero_centered_gamma) = 0;
  virtual void do_rmsnorm_forward(void* out, float* rstd, const void* inp, const void* weight, int N, int C, float eps,
                                  bool zero_centered_gamma) = 0;
  virtual void do_rmsnorm_backward(void* dinp_acc, float* dweight, const void* dout, const void* inp,
                                   const void* weight, const float* rstd, int N, int C, bool zero_centered_gamma) = 0;
  virtual void do_residual_layernorm_forward(void* residual_out, void* norm_out, float* mean, float* rstd,
                                             const void* a, const void* b, const void* weight, const void* bias, int N,
                                             int C, float eps, bool zero_centered_gamma) = 0;
  virtual void do_residual_rmsnorm_forward(void* residual_out, void* norm_out, float* rstd, const void* a,
                                           const void* b, const void* weight, int N, int C, float eps,
                                           bool zero_centered_gamma) = 0;
  virtual void do_matmul_forward(void* out, const void* inp, const void* weight, const void* bias, int N, int IC,
                                 int OC) = 0;
  virtual void do_matmul_backward(void* dinp, float* dweight, float* dbias, const void* dout, const void* inp,
                                  const void* weight, int N, int IC, int OC, bool accumulate_dinp) = 0;
  virtual void do_matmul_bias_gelu_forward(void* out, void* pre_gelu, const void* inp, const void* weight,
                                           const void* bias, int N, int IC, int OC, GeluKind kind) = 0;
  virtual void do_matmul_dgelu_backward(void* dpre, float* dweight, float* dbias, const void* dout, const void* inp,
                                        const void* pre_gelu, const void* weight, int N, int IC, int OC,
                                        GeluKind kind) = 0;
  virtual void do_gelu_forward(void* out, const void* inp, std::size_t n, GeluKind kind) = 0;
  virtual void do_gelu_backward(void* dinp, const void* inp, const void* dout, std::size_t n, GeluKind kind) = 0;
  virtual void do_swiglu_forward(void* out, const void* inp, int N, int F) = 0;
  virtual void do_swiglu_backward(void* dinp, const void* inp, const void* dout, int N, int F) = 0;
  virtual void do_add(void* out, const void* a, const void* b, std::size_t n) = 0;
  virtual void do_add_inplace(void* dst, const void* src, std::size_t n) = 0;
  virtual void do_scale_inplace(float* x, float s, std::size_t n) = 0;
  virtual void do_dropout_forward(void* out, const void* inp, std::size_t n, float p, uint64_t seed,
                                  uint64_t offset) = 0;
  virtual void do_dropout_backward(void* dinp, const void* dout, std::size_t n, float p, uint64_t seed,
                                   uint64_t offset) = 0;
  virtual void do_rope(void* qkv, const int32_t* positions, int N, int NH, int NKV, int HS, int rotary_dim, float base,
                       bool interleaved, bool inverse) = 0;
  virtual void do_attention_forward(void* out, float* lse, const void* qkv, const int32_t* segment_ids, int B, int T,
                                    int NH, int NKV, int HS, float dropout_p, uint64_t seed, uint64_t offset) = 0;
  virtual void do_attention_backward(void* dqkv, const void* dout, const void* qkv, const void* out, const float* lse,
                                     const int32_t* segment_ids, int B, int T, int NH, int NKV, int HS, float dropout_p,
                                     uint64_t seed, uint64_t offset) = 0;
  virtual void do_xent_stats(XentStats stats, const void* logits, const int32_t* targets, int N, int V_local,
                             int V_valid_local, int vocab_start) = 0;
  virtual void do_xent_backward(void* dlogits, const void* logits, const int32_t* targets, const float* row_max,
                                const float* row_sumexp, const float* dloss, int N, int V_local, int V_valid_local,
                                int vocab_start) = 0;
  virtual void do_xent_loss(float* losses, XentStats stats, int N) = 0;
  virtual void do_moe_router_forward(float* probs, int32_t* experts, float* scores, const float* logits, int N, int E,
                                     int K, MoeScore score, bool pre_softmax) = 0;
  virtual void do_moe_sinkhorn_router_forward(float* probs, int32_t* experts, float* normed, const float* logits, int N,
                                              int E, int K, bool train) = 0;
  virtual void do_moe_router_backward(float* dlogits, const float* dprobs, const float* dscores, const float* logits,
                                      const int32_t* experts, int N, int E, int K, MoeScore score,
                                      bool pre_softmax) = 0;
  virtual void do_moe_dispatch_plan(int32_t* dest_row, int32_t* segment_rows, const int32_t* experts,
                                    const float* probs, int N, int E, int K, int capacity, MoeDropPolicy policy,
                                    bool pad_to_capacity) = 0;
  virtual void do_moe_permute(void* out, const void* inp, const int32_t* dest_row, int N, int K, int C, int R) = 0;
  virtual void do_moe_permute_backward(void* dinp, const void* dout, const int32_t* dest_row, int N, int K, int C) = 0;
  virtual void do_moe_unpermute(void* out, const void* inp, const float* probs, const int32_t* dest_row, int N, int K,
                                int C) = 0;
  virtual void do_moe_unpermute_backward(void* dinp, float* dprobs, const void* dout, const void* inp,
                                         const float* probs, const int32_t* dest_row, int N, int K, int C, int R) = 0;
  virtual void do_moe_grouped_matmul_forward(void* out, const void* inp, const void* weight, const int32_t* chunk_rows,
                                             int E, int chunks, int IC, int OC) = 0;
  virtual void do_moe_grouped_matmul_backward(void* dinp, float* dweight, const void* dout, const void* inp,
                                              const void* weight, const int32_t* chunk_rows, int E, int chunks, int IC,
                                              int OC) = 0;
  virtual void do_moe_load_balancing_loss(float* loss, const float* scores, const int32_t* experts, int N, int E, int K,
                                          int seqs, float coeff) = 0;
  virtual void do_moe_load_balancing_loss_backward(float* dscores, const int32_t* experts, int N, int E, int K,
                                                   int seqs, float coeff_times_dloss) = 0;
  virtual void do_moe_z_loss(float* loss, const float* logits, int N, int E, float coeff) = 0;
  virtual void do_moe_z_loss_backward(float* dlogits_acc, const float* logits, int N, int E,
                                      float coeff_times_dloss) = 0;
  virtual void do_adamw_update(float* master, void* model_param, const float* grad, float* m, float* v, std::size_t n,
                               float lr, float beta1, float beta2, float eps, float weight_decay, int step,
                               float grad_scale) = 0;
  virtual double do_sum_squares(const float* x, std::size_t n) = 0;

 private:
  BackendOptions options_;
};

// "cpu" (always built; fp32 only, attention Auto only) or "cuda" (built with GPTRAIN_HAVE_CUDA, otherwise
// an Error saying so; opens GPU options.device and applies options.attention and options.deterministic).
std::unique_ptr<Backend> make_backend(const std::string& name, DType compute_dtype, const BackendOptions& options = {});

// GPUs visible to this process, without opening one; 0 in a build without CUDA or with no usable driver.
int cuda_device_count();

}  // namespace gptrain
