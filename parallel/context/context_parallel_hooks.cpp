#include "parallel/context/context_parallel_hooks.h"

#include "core/common/error.h"
#include "core/common/profile_range.h"

#include <chrono>
#include <utility>

namespace gptrain::parallel {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ContextExchangeBytes context_exchange_bytes(int cp, int B, int T, int NH, int NKV, int HS, DType act) {
  ContextExchangeBytes e;
  const std::size_t rows = std::size_t(B) * T, kv = rows * 2 * std::size_t(NKV) * HS;
  e.kv_block = kv * dtype_size(act);
  e.dkv_block = kv * sizeof(float);
  const std::size_t steps = std::size_t(cp > 1 ? cp - 1 : 0);
  e.forward = steps * e.kv_block;
  e.backward = cp > 1 ? steps * (e.kv_block + e.dkv_block) + e.dkv_block : 0;
  const std::size_t out = rows * std::size_t(NH) * HS * sizeof(float);
  e.buffers = 2 * e.kv_block + 2 * e.dkv_block + 2 * out;
  if (act != DType::F32) e.buffers += rows * std::size_t(NH + 2 * NKV) * HS * sizeof(float);
  return e;
}

ContextParallelHooks::ContextParallelHooks(ParallelHooks& inner, Communicator& cp, Backend& backend, bool overlap)
    : ForwardingHooks(inner),
      cp_(cp),
      be_(backend),
      overlap_(overlap),
      next_((cp.rank() + 1) % cp.size()),
      prev_((cp.rank() + cp.size() - 1) % cp.size()),
      kv_a_(backend),
      kv_b_(backend),
      dkv_a_(backend),
      dkv_b_(backend),
      out_acc_(backend),
      dq_acc_(backend),
      dqkv_f32_(backend) {}

std::size_t ContextParallelHooks::buffer_bytes() const {
  return kv_a_.capacity() + kv_b_.capacity() + dkv_a_.capacity() + dkv_b_.capacity() + out_acc_.capacity() +
         dq_acc_.capacity() + dqkv_f32_.capacity();
}

void ContextParallelHooks::context_attention_forward(HookCall, void* out, float* lse, const void* qkv, int B, int T,
                                                     int NH, int NKV, int HS, float dropout_p, uint64_t seed,
                                                     uint64_t offset, HeadSlice heads) {
  ProfileRange range("context-parallel-attention");
  const int cp = cp_.size(), r = cp_.rank(), N = B * T;
  check(T % 2 == 0, "context-parallel attention: {} local rows per sequence do not split into 2 chunks", T);
  const std::size_t kv_bytes = std::size_t(N) * 2 * NKV * HS * dtype_size(be_.compute_dtype());
  void* cur = kv_a_.get(kv_bytes);
  void* nxt = kv_b_.get(kv_bytes);
  float* acc = static_cast<float*>(out_acc_.get(std::size_t(N) * NH * HS * sizeof(float)));
  be_.attention_kv_pack(cur, qkv, N, NH, NKV, HS);
  for (int step = 0; step < cp; ++step) {
    const int j = (r - step + cp) % cp;
    std::unique_ptr<PendingCollective> moving;
    const std::vector<P2POp> ops{P2POp::send_to(cur, kv_bytes, next_), P2POp::recv_from(nxt, kv_bytes, prev_)};
    const bool more = step + 1 < cp;
    double t0 = now_seconds();
    if (more) {
      if (overlap_) {
        moving = cp_.ibatch_send_recv(ops, ElemType::Byte);
      } else {
        cp_.batch_send_recv(ops, ElemType::Byte);
      }
    }
    double t1 = now_seconds();
    wait_s_ += t1 - t0;
    be_.attention_block_forward(acc, lse, qkv, cur, B, NH, NKV, HS, AttentionBlock{T / 2, cp, r, j}, step == 0,
                                dropout_p, seed, offset, heads);
    t0 = now_seconds();
    compute_s_ += t0 - t1;
    if (moving) moving->wait();
    wait_s_ += now_seconds() - t0;
    std::swap(cur, nxt);
  }
  be_.convert(out, be_.compute_dtype(), acc, DType::F32, std::size_t(N) * NH * HS);
}

void ContextParallelHooks::context_attention_backward(HookCall, void* dqkv, const void* dout, const void* qkv,
                                                      const void* out, const float* lse, int B, int T, int NH, int NKV,
                                                      int HS, float dropout_p, uint64_t seed, uint64_t offset,
                                                      HeadSlice heads) {
  ProfileRange range("context-parallel-attention-backward");
  const int cp = cp_.size(), r = cp_.rank(), N = B * T;
  const std::size_t kv_elems = std::size_t(N) * 2 * NKV * HS;
  const std::size_t kv_bytes = kv_elems * dtype_size(be_.compute_dtype()), dkv_bytes = kv_elems * sizeof(float);
  void* cur = kv_a_.get(kv_bytes);
  void* nxt = kv_b_.get(kv_bytes);
  float* dcur = static_cast<float*>(dkv_a_.get(dkv_bytes));
  float* dnxt = static_cast<float*>(dkv_b_.get(dkv_bytes));
  const std::size_t q_elems = std::size_t(N) * NH * HS;
  float* dq = static_cast<float*>(dq_acc_.get(q_elems * sizeof(float)));
  be_.attention_kv_pack(cur, qkv, N, NH, NKV, HS);
  be_.fill_zero(dcur, dkv_bytes);
  be_.fill_zero(dq, q_elems * sizeof(float));
  for (int step = 0; step < cp; ++step) {
    const int j = (r - step + cp) % cp;
    // The K/V block moves on while this rank computes with it (both only read it); its dK/dV accumulator
    // can move only after this rank has added its share.
    std::unique_ptr<PendingCollective> moving;
    const bool more = step + 1 < cp;
    double t0 = now_seconds();
    if (more && overlap_)
      moving = cp_.ibatch_send_recv({P2POp::send_to(cur, kv_bytes, next_), P2POp::recv_from(nxt, kv_bytes, prev_)},
                                    ElemType::Byte);
    double t1 = now_seconds();
    wait_s_ += t1 - t0;
    be_.attention_block_backward(dq, dcur, dout, qkv, cur, out, lse, B, NH, NKV, HS, AttentionBlock{T / 2, cp, r, j},
                                 dropout_p, seed, offset, heads);
    t0 = now_seconds();
    compute_s_ += t0 - t1;
    std::vector<P2POp> ops;
    if (more && !overlap_) {
      ops.push_back(P2POp::send_to(cur, kv_bytes, next_));
      ops.push_back(P2POp::recv_from(nxt, kv_bytes, prev_));
    }
    // The accumulator of block j goes to the next rank; after the last step that is its owner, r + 1 - cp.
    if (cp > 1) {
      ops.push_back(P2POp::send_to(dcur, dkv_bytes, next_));
      ops.push_back(P2POp::recv_from(dnxt, dkv_bytes, prev_));
    }
    if (moving) moving->wait();
    if (!ops.empty()) cp_.batch_send_recv(ops, ElemType::Byte);
    wait_s_ += now_seconds() - t0;
    if (cp > 1) {
      std::swap(cur, nxt);
      std::swap(dcur, dnxt);
    }
  }
  // dcur now holds this rank's dK/dV summed over every rank's queries: assemble dQKV.
  const int QW = NH * HS, KW = 2 * NKV * HS, W = QW + KW;
  float* f32 = be_.compute_dtype() == DType::F32 ? static_cast<float*>(dqkv)
                                                 : static_cast<float*>(dqkv_f32_.get(std::size_t(N) * W * 4));
  be_.copy_2d_f32(f32, W, dq, QW, N, QW);
  be_.copy_2d_f32(f32 + QW, W, dcur, KW, N, KW);
  if (f32 != dqkv) be_.convert(dqkv, be_.compute_dtype(), f32, DType::F32, std::size_t(N) * W);
}

}  // namespace gptrain::parallel
