#include "parallel/moe/tp_expert_hooks.h"

#include "core/common/error.h"
#include "core/common/profile_range.h"
#include "parallel/tensor/tp_hooks.h"

#include <algorithm>
#include <numeric>

namespace gptrain::parallel {

TpExpertHooks::TpExpertHooks(ParallelHooks& inner, Communicator& ep, Backend& backend)
    : ForwardingHooks(inner), ep_(ep), be_(backend), send_(backend), recv_(backend), out_(backend) {}

const void* TpExpertHooks::moe_to_experts(HookCall c, const void* perm, const int32_t* segment_rows, int E, int C,
                                          int32_t* expert_chunk_rows) {
  check(!open_, "expert parallelism over TP: layer {} sends rows to the experts before the previous exchange returned",
        c.layer);
  const int ep = ep_.size(), el = E / ep, me = ep_.rank();
  check(el * ep == E, "expert parallelism over TP: layer {} routes over {} experts, not a multiple of EP {}", c.layer,
        E, ep);
  segments_.assign(segment_rows, segment_rows + E);
  open_ = true;
  // Chunks (E_local, EP): every row of a local expert in chunk 0 (one GEMM per expert, as in one process).
  std::fill(expert_chunk_rows, expert_chunk_rows + std::size_t(el) * ep, 0);
  for (int l = 0; l < el; ++l) expert_chunk_rows[std::size_t(l) * ep] = segment_rows[me * el + l];
  const int64_t first = std::accumulate(segment_rows, segment_rows + me * el, int64_t(0));
  return static_cast<const char*>(perm) + std::size_t(first) * C * dtype_size(be_.compute_dtype());
}

const void* TpExpertHooks::moe_from_experts(HookCall c, const void* expert_out, const int32_t* segment_rows, int E,
                                            int C) {
  check(open_ && int(segments_.size()) == E && std::equal(segment_rows, segment_rows + E, segments_.begin()),
        "expert parallelism over TP: layer {} brings expert rows back without the matching exchange to the experts",
        c.layer);
  open_ = false;
  const int ep = ep_.size(), el = E / ep, me = ep_.rank();
  // Each rank's experts own one contiguous block of the buffer; blocks are padded to the largest for the gather.
  std::vector<int64_t> first(ep + 1, 0);
  for (int r = 0; r < ep; ++r)
    first[r + 1] = first[r] + std::accumulate(segment_rows + r * el, segment_rows + (r + 1) * el, int64_t(0));
  int64_t most = 0;
  for (int r = 0; r < ep; ++r) most = std::max(most, first[r + 1] - first[r]);
  const std::size_t es = dtype_size(be_.compute_dtype()), row = std::size_t(C) * es;
  void* out = out_.get(std::max<std::size_t>(std::size_t(first[ep]) * row, 1));
  if (most == 0) return out;
  void* send = send_.get(std::size_t(most) * row);
  void* recv = recv_.get(std::size_t(most) * ep * row);
  const int64_t mine = first[me + 1] - first[me];
  if (mine > 0) be_.copy(send, expert_out, std::size_t(mine) * row);
  {
    ProfileRange range("ep-over-tp-all-gather");
    ep_.all_gather(recv, send, std::size_t(most) * C, act_elem_type(be_.compute_dtype()));
  }
  rows_sent_ += most * (ep - 1);
  for (int r = 0; r < ep; ++r)
    if (first[r + 1] > first[r])
      be_.copy(static_cast<char*>(out) + std::size_t(first[r]) * row,
               static_cast<const char*>(recv) + std::size_t(r) * std::size_t(most) * row,
               std::size_t(first[r + 1] - first[r]) * row);
  return out;
}

}  // namespace gptrain::parallel
