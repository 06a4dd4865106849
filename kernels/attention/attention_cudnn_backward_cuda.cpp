// cuDNN fused attention backward graph (cuDNN 9 backend API; see attention_cudnn.h). The backend API
// has no single backward operation that takes a causal mask before cuDNN 9.21, so the graph spells out
// the flash-attention backward in the operation pattern cuDNN's fused SDPA-backward engines recognise
// (the pattern NVIDIA's cudnn-frontend emits for sdpa_backward on cuDNN 9):
//   D  = rowsum(dO * O) * 1                      -> softmax_sum (B, NH, T, 1) fp32, workspace scratch
//   P  = exp(causal_mask(scale * Q K^T) - Stats)  (Stats = our lse: natural-log logsumexp, (B, NH, T, 1))
//   dV = P^T dO                                   (GQA: per query head, then summed over the group)
//   dS = P * (dO V^T - D) * scale
//   dK = dS^T Q                                   (GQA: summed over the group)
//   dQ = dS K      -> fp32 accumulator in the workspace, then copied (IDENTITY) into dQ; in
//                     deterministic mode straight into dQ, from an engine without the NONDETERMINISTIC note
// The backend API wants K and V as K^T, V^T (B, NKV, HS, T): strided views of qkv, like Q; dQ, dK, dV
// are the same views of dqkv, O and dO are (B, T, NH, HS). P^T, dS^T and K are reshape operations
// (transposed strides) of virtual tensors, never materialised.
#include <vector>

#include "kernels/attention/attention_cudnn_graph.h"

namespace gptrain::cuda {

void build_cudnn_attention_backward(CudnnAttention::Plan& p, cudnnHandle_t handle, std::size_t cudnn_version, DType t,
                                    int B, int T, int NH, int NKV, int HS, bool deterministic) {
  (void)cudnn_version;  // version-specific limits are checked in CudnnAttention::supports_backward
  const cudnnDataType_t io = t == DType::BF16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_HALF;
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const int64_t b = B, s = T, h = NH, hk = NKV, d = HS;
  const int64_t row = (h + 2 * hk) * d;  // qkv / dqkv row length
  int64_t uid = kUidVirtual;

  // Caller tensors: strided views, nothing copied.
  const std::vector<int64_t> qkv_strides = {s * row, d, row, 1};    // (B, H, T, HS) view of a qkv row block
  const std::vector<int64_t> qkv_t_strides = {s * row, d, 1, row};  // (B, H, HS, T): transposed view
  const std::vector<int64_t> o_strides = {s * h * d, d, h * d, 1};
  auto Q = p.tensor(kUidQ, io, {b, h, s, d}, qkv_strides, false);
  auto Kt = p.tensor(kUidK, io, {b, hk, d, s}, qkv_t_strides, false);
  auto Vt = p.tensor(kUidV, io, {b, hk, d, s}, qkv_t_strides, false);
  auto O = p.tensor(kUidO, io, {b, h, s, d}, o_strides, false);
  auto dO = p.tensor(kUidDO, io, {b, h, s, d}, o_strides, false);
  auto Stats = p.tensor(kUidStats, f32, {b, h, s, 1}, {h * s, s, 1, 1}, false);
  auto dQ = p.tensor(kUidDQ, io, {b, h, s, d}, qkv_strides, false);
  auto dK = p.tensor(kUidDK, io, {b, hk, s, d}, qkv_strides, false);
  auto dV = p.tensor(kUidDV, io, {b, hk, s, d}, qkv_strides, false);
  auto Scale = p.tensor(kUidScale, f32, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  auto NegInf = p.tensor(kUidNegInf, f32, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  auto One = p.tensor(kUidOne, f32, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  const std::vector<int64_t> rd = {b, h, s, 1}, rs = {h * s, s, 1, 1};
  auto SoftmaxSum = p.tensor(kUidSoftmaxSum, f32, rd, rs, false);

  const std::vector<int64_t> sd = {b, h, s, s}, ss = {h * s * s, s * s, s, 1};  // (B, NH, Tq, Tk)
  const std::vector<int64_t> st = {h * s * s, s * s, 1, s};                     // its transpose (Tk, Tq)
  const std::vector<int64_t> hd = {b, h, s, d}, hs = {h * s * d, s * d, d, 1};  // packed per-query-head
  std::vector<cudnnBackendDescriptor_t> ops;

  // D = rowsum(dO * O); the "* 1" is the dropout-inverse-scale slot of the pattern.
  auto DoO = p.tensor(uid++, f32, hd, hs, true);
  auto Dsum = p.tensor(uid++, f32, rd, rs, true);
  ops.push_back(p.pointwise(CUDNN_POINTWISE_MUL, dO, O, DoO));
  ops.push_back(p.reduction(CUDNN_REDUCE_TENSOR_ADD, DoO, Dsum));
  ops.push_back(p.pointwise(CUDNN_POINTWISE_MUL, Dsum, One, SoftmaxSum));

  // P = exp(mask(scale * Q K^T) - Stats), recomputed from the saved logsumexp.
  auto S = p.tensor(uid++, f32, sd, ss, true);
  auto Ss = p.tensor(uid++, f32, sd, ss, true);
  ops.push_back(p.matmul(Q, Kt, S));
  ops.push_back(p.pointwise(CUDNN_POINTWISE_MUL, S, Scale, Ss));
  auto Sm = p.causal_mask(ops, Ss, NegInf, uid, sd, ss);
  auto Sc = p.tensor(uid++, f32, sd, ss, true);
  auto P = p.tensor(uid++, f32, sd, ss, true);
  ops.push_back(p.pointwise(CUDNN_POINTWISE_SUB, Sm, Stats, Sc));
  ops.push_back(p.pointwise(CUDNN_POINTWISE_EXP, Sc, nullptr, P));

  // dV = P^T dO
  auto Pt = p.tensor(uid++, io, sd, st, true);
  ops.push_back(p.reshape(P, Pt));
  if (h == hk) {
    ops.push_back(p.matmul(Pt, dO, dV));
  } else {
    auto dVh = p.tensor(uid++, io, hd, hs, true);
    ops.push_back(p.matmul(Pt, dO, dVh));
    ops.push_back(p.reduction(CUDNN_REDUCE_TENSOR_ADD, dVh, dV));
  }

  // dS = P * (dO V^T - D) * scale
  auto dP = p.tensor(uid++, f32, sd, ss, true);
  auto dPc = p.tensor(uid++, f32, sd, ss, true);
  auto dS0 = p.tensor(uid++, f32, sd, ss, true);
  auto dS = p.tensor(uid++, f32, sd, ss, true);
  ops.push_back(p.matmul(dO, Vt, dP));
  ops.push_back(p.pointwise(CUDNN_POINTWISE_SUB, dP, SoftmaxSum, dPc));
  ops.push_back(p.pointwise(CUDNN_POINTWISE_MUL, dPc, P, dS0));
  ops.push_back(p.pointwise(CUDNN_POINTWISE_MUL, dS0, Scale, dS));

  // dK = dS^T Q
  auto dSt = p.tensor(uid++, io, sd, st, true);
  ops.push_back(p.reshape(dS, dSt));
  if (h == hk) {
    ops.push_back(p.matmul(dSt, Q, dK));
  } else {
    auto dKh = p.tensor(uid++, io, hd, hs, true);
    ops.push_back(p.matmul(dSt, Q, dKh));
    ops.push_back(p.reduction(CUDNN_REDUCE_TENSOR_ADD, dKh, dK));
  }

  // dQ = dS K, with K the (B, NKV, T, HS) view of K^T, in fp32 like dS (a matmul's operands share one dtype).
  auto K = p.tensor(uid++, f32, {b, hk, s, d}, qkv_strides, true);
  ops.push_back(p.reshape(Kt, K));
  if (!cudnn_attention_backward_accumulates_dq(deterministic)) {
    ops.push_back(p.matmul(dS, K, dQ));
  } else {
    // A non-virtual fp32 dQ is how the backend API selects the engines that accumulate dQ across
    // key tiles with atomics (faster, not bitwise reproducible).
    auto dQacc = p.tensor(kUidDQAccum, f32, hd, hs, false);
    ops.push_back(p.matmul(dS, K, dQacc));
    ops.push_back(p.pointwise(CUDNN_POINTWISE_IDENTITY, dQacc, nullptr, dQ));
    p.dq_accum = true;
  }
  p.finalize(handle, ops, deterministic);
}

}  // namespace gptrain::cuda
