// Context parallelism inside the model: the attention of ParallelHooks (core/model/parallel_hooks.h) over
// a sequence split across the CP group, every other hook forwarded to the inner hooks (tensor
// parallelism, or the single-process identities). Everything but attention is token-local, so it runs
// unchanged on this rank's rows.
//
// The ring (Megatron's p2p --cp-comm-type): CP rank r packs its K/V columns (attention_kv_pack); in step i
// it holds rank (r - i)'s block, computes its queries against it (attention_block_forward, merged by
// log-sum-exp) while the block moves on to rank r + 1 and the next one arrives from r - 1. Backward runs
// the same ring with each block's dK/dV accumulator travelling along with it (attention_block_backward),
// and a last shift returns every accumulator to the rank that owns the keys. With overlap on, a step's
// transfers are posted before its block is computed and waited for after (Communicator::ibatch_send_recv).
#pragma once

#include "core/model/parallel_hooks.h"
#include "parallel/comm/communicator.h"
#include "parallel/moe/token_dispatcher.h"

#include <cstdint>

namespace gptrain::parallel {

// Bytes one rank sends per layer and micro-batch in the ring: forward (cp - 1) K/V blocks, backward
// (cp - 1) K/V blocks with their fp32 dK/dV, plus the last dK/dV shift. B, T: local rows per sample.
struct ContextExchangeBytes {
  std::size_t kv_block = 0;   // one K/V block (compute dtype)
  std::size_t dkv_block = 0;  // one dK/dV accumulator (fp32)
  std::size_t forward = 0, backward = 0;
  // Device buffers the hooks hold: two K/V blocks, two dK/dV blocks, the fp32 output and dQ accumulators
  // (and the fp32 dQKV staging when the compute dtype is not fp32).
  std::size_t buffers = 0;
};
ContextExchangeBytes context_exchange_bytes(int cp, int B, int T, int NH, int NKV, int HS, DType act);

class ContextParallelHooks final : public ForwardingHooks {
 public:
  // inner: the TP hooks or no_parallel_hooks(); cp: the CP group (data communicator). overlap: post each
  // step's transfers before computing its block (else transfer, then compute).
  ContextParallelHooks(ParallelHooks& inner, Communicator& cp, Backend& backend, bool overlap = true);
  ContextParallelHooks(const ContextParallelHooks&) = delete;
  ContextParallelHooks& operator=(const ContextParallelHooks&) = delete;

  void context_attention_forward(HookCall c, void* out, float* lse, const void* qkv, int B, int T, int NH, int NKV,
                                 int HS, float dropout_p, uint64_t seed, uint64_t offset, HeadSlice heads) override;
  void context_attention_backward(HookCall c, void* dqkv, const void* dout, const void* qkv, const void* out,
                                  const float* lse, int B, int T, int NH, int NKV, int HS, float dropout_p,
                                  uint64_t seed, uint64_t offset, HeadSlice heads) override;

  // Bytes of the buffers the ring holds now (they only grow).
  std::size_t buffer_bytes() const;
  // Seconds spent in transfer calls, and computing blocks, since construction (the overlap bench). Host
  // clock, no device synchronization: exact on CPU, launch times on a GPU.
  double wait_seconds() const { return wait_s_; }
  double compute_seconds() const { return compute_s_; }

 private:
  Communicator& cp_;
  Backend& be_;
  bool overlap_;
  int next_, prev_;
  GrowBuffer kv_a_, kv_b_, dkv_a_, dkv_b_, out_acc_, dq_acc_, dqkv_f32_;
  double wait_s_ = 0.0, compute_s_ = 0.0;
};

}  // namespace gptrain::parallel
