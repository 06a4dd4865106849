#include "parallel/context/context_batch.h"

#include "core/common/error.h"
#include "kernels/attention/attention_block_math.h"

namespace gptrain::parallel {
namespace {

template <typename V>
V slice_rows(const V& full, int B, int T, int cp, int rank) {
  if (full.empty()) return full;
  const int local = T / cp, chunk = T / (2 * cp);
  V out(std::size_t(B) * local);
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < local; ++i)
      out[std::size_t(b) * local + i] = full[std::size_t(b) * T + cp_global_position(i, chunk, cp, rank)];
  return out;
}

}  // namespace

HostMicroBatch context_parallel_slice(const HostMicroBatch& mb, int B, int T, int cp, int rank) {
  check(cp >= 1 && T % (2 * cp) == 0, "context parallelism: a sequence of {} tokens does not split into 2 x {} chunks",
        T, cp);
  const std::size_t n = std::size_t(B) * T;
  check(mb.tokens.size() == n && mb.labels.size() == n && mb.loss_mask.size() == n && mb.position_ids.size() == n,
        "context parallelism: the micro-batch holds {} tokens; expected {} x {}", mb.tokens.size(), B, T);
  HostMicroBatch out;
  out.tokens = slice_rows(mb.tokens, B, T, cp, rank);
  out.labels = slice_rows(mb.labels, B, T, cp, rank);
  out.loss_mask = slice_rows(mb.loss_mask, B, T, cp, rank);
  out.position_ids = slice_rows(mb.position_ids, B, T, cp, rank);
  out.segment_ids = slice_rows(mb.segment_ids, B, T, cp, rank);
  out.dropout_seed = mb.dropout_seed;
  return out;
}

}  // namespace gptrain::parallel
