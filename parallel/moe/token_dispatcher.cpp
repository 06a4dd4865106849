#include "parallel/moe/token_dispatcher.h"

#include "core/common/error.h"
#include "parallel/tensor/tp_hooks.h"

#include <algorithm>

namespace gptrain::parallel {

TokenDispatcherType parse_token_dispatcher_type(const std::string& s) {
  if (s == "allgather") return TokenDispatcherType::AllGather;
  if (s == "alltoall") return TokenDispatcherType::AllToAll;
  fail("--moe-token-dispatcher-type {}: expected allgather or alltoall (flex needs DeepEP, not available)", s);
}

const char* token_dispatcher_name(TokenDispatcherType t) {
  return t == TokenDispatcherType::AllGather ? "allgather" : "alltoall";
}

int64_t DispatchPlan::rows_sent_to_others() const {
  int64_t n = 0;
  for (int e = 0; e < num_experts; ++e)
    if (e / local_experts != me) n += rows_of(me, e);
  return n;
}

TokenDispatcher::TokenDispatcher(Communicator& ep, Communicator& host_ep, Backend& backend, int num_experts,
                                 TokenDispatcherType type)
    : ep_(ep),
      host_ep_(host_ep),
      be_(backend),
      num_experts_(num_experts),
      type_(type),
      elem_(act_elem_type(backend.compute_dtype())),
      scratch_{GrowBuffer(backend), GrowBuffer(backend)} {
  check(num_experts >= 1 && num_experts % ep.size() == 0,
        "--num-experts {} must be a multiple of --expert-model-parallel-size {} (each EP rank holds E/EP experts)",
        num_experts, ep.size());
  check(host_ep.size() == ep.size() && host_ep.rank() == ep.rank(), "token dispatcher: host and data EP groups differ");
}

DispatchPlan TokenDispatcher::plan(const int32_t* segment_rows) {
  DispatchPlan p;
  p.ep = ep_.size();
  p.me = ep_.rank();
  p.num_experts = num_experts_;
  p.local_experts = local_experts();
  p.first_expert = first_expert();
  p.segment_rows.resize(static_cast<std::size_t>(p.ep * num_experts_));
  std::copy(segment_rows, segment_rows + num_experts_,
            p.segment_rows.begin() + static_cast<std::ptrdiff_t>(p.me * num_experts_));
  host_ep_.all_gather(p.segment_rows.data(), p.segment_rows.data() + p.me * num_experts_,
                      static_cast<std::size_t>(num_experts_), ElemType::I32);
  p.local_segment_rows.assign(static_cast<std::size_t>(p.local_experts), 0);
  p.local_chunk_rows.assign(static_cast<std::size_t>(p.local_experts * p.ep), 0);
  for (int s = 0; s < p.ep; ++s) {
    int r = 0;
    for (int e = 0; e < num_experts_; ++e) r += p.rows_of(s, e);
    p.max_rows = std::max(p.max_rows, r);
    if (s == p.me) p.rows = r;
    for (int l = 0; l < p.local_experts; ++l) {
      p.local_segment_rows[l] += p.rows_of(s, p.first_expert + l);
      p.local_chunk_rows[static_cast<std::size_t>(l * p.ep + s)] = p.rows_of(s, p.first_expert + l);
    }
  }
  for (int32_t r : p.local_segment_rows) p.input_rows += r;
  return p;
}

template <class SrcStart>
void TokenDispatcher::move_chunks(const DispatchPlan& p, char* expert_major, char* other, std::size_t row_bytes,
                                  bool to_expert_major, SrcStart src_start) {
  std::size_t row = 0;
  for (int l = 0; l < p.local_experts; ++l) {
    for (int s = 0; s < p.ep; ++s) {
      const int n = p.rows_of(s, p.first_expert + l);
      if (n == 0) continue;
      char* em = expert_major + row * row_bytes;
      char* ot = other + static_cast<std::size_t>(src_start(s, p.first_expert + l)) * row_bytes;
      if (to_expert_major) {
        be_.copy(em, ot, static_cast<std::size_t>(n) * row_bytes);
      } else {
        be_.copy(ot, em, static_cast<std::size_t>(n) * row_bytes);
      }
      row += static_cast<std::size_t>(n);
    }
  }
}

namespace {

// Row where expert e's segment starts in rank s's permuted buffer.
int segment_start(const DispatchPlan& p, int s, int e) {
  int r = 0;
  for (int i = 0; i < e; ++i) r += p.rows_of(s, i);
  return r;
}

// The alltoall receive buffer holds, per source s (in rank order), s's rows for my local experts in
// expert order: the row where (s, e) starts there.
int received_start(const DispatchPlan& p, int s, int e) {
  int r = 0;
  for (int t = 0; t < s; ++t)
    for (int l = 0; l < p.local_experts; ++l) r += p.rows_of(t, p.first_expert + l);
  for (int i = p.first_expert; i < e; ++i) r += p.rows_of(s, i);
  return r;
}

// Elements of rank s's rows for the experts of rank d.
std::size_t rows_for_rank(const DispatchPlan& p, int s, int d) {
  std::size_t n = 0;
  for (int l = 0; l < p.local_experts; ++l) n += static_cast<std::size_t>(p.rows_of(s, d * p.local_experts + l));
  return n;
}

}  // namespace

void TokenDispatcher::dispatch(const DispatchPlan& p, void* expert_in, const void* perm, int C) {
  const std::size_t row_bytes = static_cast<std::size_t>(C) * dtype_size(be_.compute_dtype());
  char* in = static_cast<char*>(expert_in);
  if (type_ == TokenDispatcherType::AllToAll) {
    std::vector<std::size_t> send(p.ep), recv(p.ep);
    for (int r = 0; r < p.ep; ++r) {
      send[r] = rows_for_rank(p, p.me, r) * C;
      recv[r] = rows_for_rank(p, r, p.me) * C;
    }
    // One local expert: the receive order (source, then row) is already expert-major.
    char* received = p.local_experts == 1 ? in : static_cast<char*>(scratch_[0].get(p.input_rows * row_bytes));
    ep_.all_to_all_v(received, recv, perm, send, elem_);
    if (p.local_experts > 1)
      move_chunks(p, in, received, row_bytes, true, [&](int s, int e) { return received_start(p, s, e); });
    return;
  }
  const std::size_t block = static_cast<std::size_t>(p.max_rows) * row_bytes;
  char* gathered = static_cast<char*>(scratch_[0].get(block * p.ep));
  char* mine = gathered + p.me * block;
  // The rows after R (padding up to the largest R) are never read: only the experts' chunks are kept.
  if (p.rows > 0) be_.copy(mine, perm, static_cast<std::size_t>(p.rows) * row_bytes);
  ep_.all_gather(gathered, mine, static_cast<std::size_t>(p.max_rows) * C, elem_);
  move_chunks(p, in, gathered, row_bytes, true, [&](int s, int e) { return s * p.max_rows + segment_start(p, s, e); });
}

void TokenDispatcher::combine(const DispatchPlan& p, void* perm, const void* expert_out, int C) {
  const std::size_t row_bytes = static_cast<std::size_t>(C) * dtype_size(be_.compute_dtype());
  char* out = static_cast<char*>(const_cast<void*>(expert_out));  // only read: move_chunks copies out of it
  if (type_ == TokenDispatcherType::AllToAll) {
    std::vector<std::size_t> send(p.ep), recv(p.ep);
    for (int r = 0; r < p.ep; ++r) {
      send[r] = rows_for_rank(p, r, p.me) * C;
      recv[r] = rows_for_rank(p, p.me, r) * C;
    }
    char* outgoing = out;
    if (p.local_experts > 1) {
      outgoing = static_cast<char*>(scratch_[0].get(p.input_rows * row_bytes));
      move_chunks(p, out, outgoing, row_bytes, false, [&](int s, int e) { return received_start(p, s, e); });
    }
    ep_.all_to_all_v(perm, recv, outgoing, send, elem_);
    return;
  }
  const std::size_t block = static_cast<std::size_t>(p.max_rows) * row_bytes;
  char* full = static_cast<char*>(scratch_[0].get(block * p.ep));
  be_.fill_zero(full, block * p.ep);
  move_chunks(p, out, full, row_bytes, false, [&](int s, int e) { return s * p.max_rows + segment_start(p, s, e); });
  char* mine = static_cast<char*>(scratch_[1].get(block));
  ep_.reduce_scatter(mine, full, static_cast<std::size_t>(p.max_rows) * C, elem_, ReduceOp::Sum);
  if (p.rows > 0) be_.copy(perm, mine, static_cast<std::size_t>(p.rows) * row_bytes);
}

}  // namespace gptrain::parallel
