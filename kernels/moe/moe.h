// Mixture-of-Experts ops (kernels/backend.h, "mixture of experts"): the router (scores, top-k, routing
// probabilities), the dispatch plan (expert capacity and token dropping), permute / unpermute of token
// rows by expert, the grouped expert GEMM, the load-balancing and z losses, and every backward.
// Maths of one token's router row: moe_math.h (shared by both twins).
//
// Design
// - Routing is kept compact: experts (N, K) int32 and probs (N, K) fp32, the k-th choice of token n,
//   ordered by decreasing score (Megatron's dense [num_tokens, num_experts] routing map and probs hold the
//   same information). Top-k ties go to the lower expert index.
// - The dispatch plan maps choice (n, k) to a row of the permuted buffer: dest_row (N, K), -1 when the
//   choice was dropped by the capacity. The permuted buffer (R, C) holds expert 0's rows, then expert 1's,
//   ...; segment_rows (E) gives each expert's row count (R = their sum). Inside a segment, rows are in
//   token order (stable: the plan depends only on the routing, never on thread timing), so every op
//   over it is deterministic and the same on both twins.
// - Capacity (Megatron's --moe-expert-capacity-factor): capacity = ceil(N * K / E * factor)
//   (moe_expert_capacity). An expert chosen by more tokens keeps `capacity` of them: those with the
//   highest routing probability (policy Probs; ties: the earlier token) or the earliest in token order
//   (policy Position); the others are dropped (their probability no longer reaches the output). When
//   capacity >= N nothing is dropped (as Megatron). Dropless (capacity < 0): every choice is kept.
// - Padding to capacity (--moe-pad-expert-input-to-capacity): every segment is min(capacity, N) rows, the
//   rows after the expert's kept tokens are zero. Megatron pads by routing extra real tokens with
//   probability 0; their contribution to the output and to every gradient that reaches the router is
//   zero either way, so zero rows give the same results with fixed shapes.
// - Grouped GEMM: expert e's weight (OC, IC) multiplies its segment, which comes in chunks (one per
//   source rank under expert parallelism; one in a single process); the counts are read on the host (the
//   caller copies them there once per layer, as Megatron's tokens-per-expert). Outputs and input
//   gradients take one GEMM per chunk, so a row's rounding never depends on other ranks' rows; the weight
//   gradient one GEMM per expert. CPU: BLAS calls; CUDA: cuBLASLt GEMMs (a grouped or batched GEMM is not
//   chosen yet).
// - Losses in fp32 from the router's pre-capacity top-k (Megatron): the load-balancing loss over S-token
//   sequences (seqs = 1: aux_loss over all N tokens; seqs = B: seq_aux_loss, token n = b * S + s), and
//   the z-loss.
// - Sinkhorn routing (--moe-router-load-balancing-type sinkhorn, training): d0 (N), d1 (E) rescale
//   exp(logits) until its rows and columns are balanced; the column sums are over all N tokens, so this
//   is the one router op that is not row-local (CPU: sums in double in token order; CUDA: one block
//   iterates, each column sum a fixed cub tree). The normalised matrix is only used for the choice. Their gradients go
//   to the router through dscores (load balancing) and dlogits (z-loss).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/backend.h"
#include "kernels/cuda/stream_fwd.h"
#include "kernels/cuda/workspace_size.h"

namespace gptrain {

// Megatron's expert capacity for N tokens routed top-K over E experts: ceil((N * K / E) * factor).
int moe_expert_capacity(int N, int E, int K, double capacity_factor);

}  // namespace gptrain

namespace gptrain::cpu {

void moe_router_forward(float* probs, int32_t* experts, float* scores, const float* logits, int N, int E, int K,
                        MoeScore score, bool pre_softmax, MoeChoice choice);
void moe_router_backward(float* dlogits, const float* dprobs, const float* dscores, const float* logits,
                         const int32_t* experts, int N, int E, int K, MoeScore score, bool pre_softmax);
void moe_input_jitter(float* out, const float* inp, std::size_t n, float eps, uint64_t seed, uint64_t offset);
void moe_input_jitter_backward(float* dinp_acc, const float* dout, std::size_t n, float eps, uint64_t seed,
                               uint64_t offset);
void moe_sinkhorn_router_forward(float* probs, int32_t* experts, float* normed, const float* logits, int N, int E,
                                 int K, bool train);
void moe_dispatch_plan(int32_t* dest_row, int32_t* segment_rows, const int32_t* experts, const float* probs, int N,
                       int E, int K, int capacity, MoeDropPolicy policy, bool pad_to_capacity);
void moe_permute(float* out, const float* inp, const int32_t* dest_row, int N, int K, int C, int R);
void moe_permute_backward(float* dinp, const float* dout, const int32_t* dest_row, int N, int K, int C);
void moe_unpermute(float* out, const float* inp, const float* probs, const int32_t* dest_row, int N, int K, int C);
void moe_unpermute_backward(float* dinp, float* dprobs, const float* dout, const float* inp, const float* probs,
                            const int32_t* dest_row, int N, int K, int C, int R);
void moe_grouped_matmul_forward(float* out, const float* inp, const float* weight, const int32_t* chunk_rows, int E,
                                int chunks, int IC, int OC);
void moe_grouped_matmul_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                                 const int32_t* chunk_rows, int E, int chunks, int IC, int OC);
void moe_load_balancing_loss(float* loss, const float* scores, const int32_t* experts, int N, int E, int K, int seqs,
                             float coeff);
void moe_load_balancing_loss_backward(float* dscores, const int32_t* experts, int N, int E, int K, int seqs,
                                      float coeff);
void moe_z_loss(float* loss, const float* logits, int N, int E, float coeff);
void moe_z_loss_backward(float* dlogits_acc, const float* logits, int N, int E, float coeff);
void moe_shared_gate_forward(float* out_acc, const float* shared, const float* gate_logits, int N, int C);
void moe_shared_gate_backward(float* dshared, float* dgate_logits, const float* dout, const float* shared,
                              const float* gate_logits, int N, int C);

}  // namespace gptrain::cpu

namespace gptrain::cuda {

// moe.cu: the router, dispatch, permute and loss kernels (fp32 router maths; act rows in dtype t).
// The grouped GEMM is the CUDA backend's cuBLASLt GEMM per chunk (cuda_backend_cuda.cpp).
void moe_router_forward(cudaStream_t s, float* probs, int32_t* experts, float* scores, const float* logits, int N,
                        int E, int K, MoeScore score, bool pre_softmax, MoeChoice choice);
void moe_router_backward(cudaStream_t s, float* dlogits, const float* dprobs, const float* dscores, const float* logits,
                         const int32_t* experts, int N, int E, int K, MoeScore score, bool pre_softmax);
void moe_input_jitter(cudaStream_t s, DType t, void* out, const void* inp, std::size_t n, float eps, uint64_t seed,
                      uint64_t offset);
void moe_input_jitter_backward(cudaStream_t s, DType t, void* dinp_acc, const void* dout, std::size_t n, float eps,
                               uint64_t seed, uint64_t offset);
void moe_sinkhorn_router_forward(cudaStream_t s, Workspace& ws, float* probs, int32_t* experts, float* normed,
                                 const float* logits, int N, int E, int K, bool train);
void moe_dispatch_plan(cudaStream_t s, int32_t* dest_row, int32_t* segment_rows, const int32_t* experts,
                       const float* probs, int N, int E, int K, int capacity, MoeDropPolicy policy,
                       bool pad_to_capacity);
void moe_permute(cudaStream_t s, DType t, void* out, const void* inp, const int32_t* dest_row, int N, int K, int C,
                 int R);
void moe_permute_backward(cudaStream_t s, DType t, void* dinp, const void* dout, const int32_t* dest_row, int N, int K,
                          int C);
void moe_unpermute(cudaStream_t s, DType t, void* out, const void* inp, const float* probs, const int32_t* dest_row,
                   int N, int K, int C);
void moe_unpermute_backward(cudaStream_t s, DType t, void* dinp, float* dprobs, const void* dout, const void* inp,
                            const float* probs, const int32_t* dest_row, int N, int K, int C, int R);
void moe_load_balancing_loss(cudaStream_t s, Workspace& ws, float* loss, const float* scores, const int32_t* experts,
                             int N, int E, int K, int seqs, float coeff);
void moe_load_balancing_loss_backward(cudaStream_t s, Workspace& ws, float* dscores, const int32_t* experts, int N,
                                      int E, int K, int seqs, float coeff);
void moe_z_loss(cudaStream_t s, Workspace& ws, float* loss, const float* logits, int N, int E, float coeff);
void moe_z_loss_backward(cudaStream_t s, float* dlogits_acc, const float* logits, int N, int E, float coeff);
void moe_shared_gate_forward(cudaStream_t s, DType t, void* out_acc, const void* shared, const void* gate_logits, int N,
                             int C);
void moe_shared_gate_backward(cudaStream_t s, DType t, void* dshared, void* dgate_logits, const void* dout,
                              const void* shared, const void* gate_logits, int N, int C);

// The scratch of the ops above that take the Workspace, by shape (for N > 0 tokens):
// Sinkhorn's row and column scales d0 (N), d1 (E) fp32, when training (otherwise none).
constexpr std::size_t moe_sinkhorn_router_scratch_bytes(std::size_t N, std::size_t E, bool train) {
  return train ? carve_bytes<float>(N) + carve_bytes<float>(E) : 0;
}
// The load-balancing loss: per-(sequence, expert) score sums and top-k counts, (seqs, E) fp64 each.
constexpr std::size_t moe_load_balancing_loss_scratch_bytes(std::size_t E, std::size_t seqs) {
  return 2 * carve_bytes<double>(seqs * E);
}
// Its backward: the top-k counts alone.
constexpr std::size_t moe_load_balancing_loss_backward_scratch_bytes(std::size_t E, std::size_t seqs) {
  return carve_bytes<double>(seqs * E);
}
// The z-loss: each row's logsumexp^2 in fp64.
constexpr std::size_t moe_z_loss_scratch_bytes(std::size_t N) { return carve_bytes<double>(N); }

}  // namespace gptrain::cuda
