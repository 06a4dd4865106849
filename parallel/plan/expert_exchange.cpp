#include "parallel/plan/expert_exchange.h"

#include "kernels/moe/moe.h"

#include <algorithm>

namespace gptrain::parallel {

double rows_sent_per_exchange(const ExpertExchangeShape& s) {
  if (s.ep <= 1) return 0.0;
  const double routed = double(s.tokens) * s.topk;
  double kept = routed;
  if (s.capacity_factor >= 0) {
    const double cap = std::min(moe_expert_capacity(s.tokens, s.num_experts, s.topk, s.capacity_factor), s.tokens);
    kept = s.pad_to_capacity ? cap * s.num_experts : std::min(routed, cap * s.num_experts);
  }
  if (s.type == TokenDispatcherType::AllToAll) return kept * (s.ep - 1) / s.ep;
  return kept * (s.ep - 1);
}

double exchange_bytes_per_step(const ExpertExchangeShape& s, int moe_layers, int micro_batches, int C,
                               std::size_t elem_bytes) {
  return rows_sent_per_exchange(s) * 4.0 * moe_layers * micro_batches * C * double(elem_bytes);
}

}  // namespace gptrain::parallel
