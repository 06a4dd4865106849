// Expert parallelism: moving the rows of an MoE layer's permuted buffer to the ranks that own their
// experts, and back (--moe-token-dispatcher-type).
//
// With --expert-model-parallel-size EP the E experts are split over the EP group: rank r owns experts
// [r * E/EP, (r + 1) * E/EP) (Megatron's local expert indices). Routing, the capacity plan and the
// permutation stay per rank (Megatron: capacity is per rank), giving the permuted buffer (R, C) of this
// rank's tokens for all E experts, expert-major (kernels/moe/moe.h). The dispatcher then
//   dispatch: (R, C) on every rank -> expert_in (R_in, C): the rows of this rank's experts from every EP
//             rank, ordered by local expert, then source rank, then the source's row order;
//   combine:  the inverse, expert_out (R_in, C) -> each row back to its source rank and row.
// Both are pure row moves, so each is the other's transpose: the backward of dispatch is combine of the
// gradient and the backward of combine is dispatch of the gradient. The rows of one expert arrive in a
// fixed order (source rank, then token) and no value is summed with another, so results do not depend
// on timing, and unpermute with the routing weights (on the source rank, as in the local layer) sees
// the same expert outputs as with EP 1.
//
//   alltoall:  counts all-gathered once per plan, then all_to_all_v of the rows (each row travels once).
//   allgather: every rank gathers every rank's permuted buffer (padded to the largest R) and keeps its
//              experts' rows; combine scatters the outputs into a zero buffer and reduce-scatters it
//              (each row has one non-zero contributor, so the sum is exact). Moves EP times the rows of
//              alltoall; Megatron's choice for small EP.
//
// Buffers are the backend's memory in the compute dtype; the communicator `ep` moves that memory,
// `host_ep` host memory (the counts). A plan belongs to one layer call (one micro-batch): the layer keeps
// it with its activations for the backward.
#pragma once

#include "kernels/backend.h"
#include "parallel/comm/communicator.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gptrain::parallel {

enum class TokenDispatcherType : uint8_t { AllGather, AllToAll };
// "allgather" | "alltoall"; anything else throws an Error naming --moe-token-dispatcher-type.
TokenDispatcherType parse_token_dispatcher_type(const std::string& s);
const char* token_dispatcher_name(TokenDispatcherType t);

// A backend buffer that only grows (the exchanges' scratch; released with the owner).
class GrowBuffer {
 public:
  explicit GrowBuffer(Backend& be) : be_(be) {}
  ~GrowBuffer() {
    if (p_ != nullptr) be_.release(p_);
  }
  GrowBuffer(const GrowBuffer&) = delete;
  GrowBuffer& operator=(const GrowBuffer&) = delete;
  std::size_t capacity() const { return cap_; }
  void* get(std::size_t bytes) {
    if (cap_ < bytes) {
      if (p_ != nullptr) be_.release(p_);
      p_ = be_.alloc(bytes);
      cap_ = bytes;
    }
    return p_;
  }

 private:
  Backend& be_;
  void* p_ = nullptr;
  std::size_t cap_ = 0;
};

// The row counts of one layer call on every EP rank.
struct DispatchPlan {
  int ep = 1, num_experts = 0, local_experts = 0, first_expert = 0, me = 0;
  std::vector<int32_t> segment_rows;        // (EP, E): rows of expert e in rank s's permuted buffer
  std::vector<int32_t> local_segment_rows;  // (E/EP): rows each local expert receives
  std::vector<int32_t> local_chunk_rows;    // (E/EP, EP): rows local expert l receives from rank s (grouped GEMM)
  int rows = 0;                             // R: this rank's permuted buffer
  int input_rows = 0;                       // R_in: rows this rank's experts receive
  int max_rows = 0;                         // the largest R of the EP group (allgather padding)
  int rows_of(int rank, int expert) const {
    return segment_rows[static_cast<std::size_t>(rank * num_experts + expert)];
  }
  int64_t rows_sent_to_others() const;  // rows of this rank that leave it (alltoall), for volume reports
};

class TokenDispatcher {
 public:
  TokenDispatcher(Communicator& ep, Communicator& host_ep, Backend& backend, int num_experts, TokenDispatcherType type);
  TokenDispatcher(const TokenDispatcher&) = delete;
  TokenDispatcher& operator=(const TokenDispatcher&) = delete;

  TokenDispatcherType type() const { return type_; }
  int ep_size() const { return ep_.size(); }
  int local_experts() const { return num_experts_ / ep_.size(); }
  int first_expert() const { return ep_.rank() * local_experts(); }

  // Collective over the EP group: every rank's segment_rows (E, host memory; the moe_dispatch_plan
  // output copied to the host).
  DispatchPlan plan(const int32_t* segment_rows);
  // expert_in (plan.input_rows, C) from perm (plan.rows, C). Collective.
  void dispatch(const DispatchPlan& plan, void* expert_in, const void* perm, int C);
  // perm (plan.rows, C) from expert_out (plan.input_rows, C). Collective.
  void combine(const DispatchPlan& plan, void* perm, const void* expert_out, int C);
  // Bytes of its staging buffers now (the memory plan's bound: parallel/plan/expert_exchange.h).
  std::size_t buffer_bytes() const { return scratch_[0].capacity() + scratch_[1].capacity(); }

 private:
  // Moves the (local expert, source) chunks between expert-major rows and a buffer where source s's
  // rows for expert e start at row src_start(s, e); to_expert_major picks the direction.
  template <class SrcStart>
  void move_chunks(const DispatchPlan& p, char* expert_major, char* other, std::size_t row_bytes, bool to_expert_major,
                   SrcStart src_start);

  Communicator& ep_;
  Communicator& host_ep_;
  Backend& be_;
  int num_experts_;
  TokenDispatcherType type_;
  ElemType elem_;
  GrowBuffer scratch_[2];
};

}  // namespace gptrain::parallel
