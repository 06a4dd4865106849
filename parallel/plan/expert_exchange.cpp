#include "parallel/plan/expert_exchange.h"

#include "kernels/moe/moe.h"
#include "parallel/pipeline/pipeline_layout.h"

#include <fmt/format.h>

#include <algorithm>

namespace gptrain::parallel {

namespace {
// Rows of one rank's tokens that its routing keeps (all of them dropless), under uniform routing.
double kept_rows(const ExpertExchangeShape& s) {
  const double routed = double(s.tokens) * s.topk;
  double kept = routed;
  if (s.capacity_factor >= 0) {
    const double cap = std::min(moe_expert_capacity(s.tokens, s.num_experts, s.topk, s.capacity_factor), s.tokens);
    kept = s.pad_to_capacity ? cap * s.num_experts : std::min(routed, cap * s.num_experts);
  }
  return kept;
}
}  // namespace

double rows_sent_per_exchange(const ExpertExchangeShape& s) {
  if (s.ep <= 1) return 0.0;
  const double kept = kept_rows(s);
  if (s.type == TokenDispatcherType::AllToAll) return kept * (s.ep - 1) / s.ep;
  return kept * (s.ep - 1);
}

double exchange_bytes_per_step(const ExpertExchangeShape& s, int moe_layers, int micro_batches, int C,
                               std::size_t elem_bytes) {
  return rows_sent_per_exchange(s) * 4.0 * moe_layers * micro_batches * C * double(elem_bytes);
}

double expert_partial_sum_rows_per_step(const ExpertExchangeShape& s, int moe_layers, int micro_batches) {
  return kept_rows(s) * 2.0 * moe_layers * micro_batches;
}

double expert_partial_sum_bytes_per_step(const ExpertExchangeShape& s, int etp, int moe_layers, int micro_batches,
                                         int C, std::size_t elem_bytes) {
  if (etp <= 1) return 0.0;
  return expert_partial_sum_rows_per_step(s, moe_layers, micro_batches) * 2.0 * (etp - 1) / etp * C *
         double(elem_bytes);
}

double over_tp_rows_sent_per_gather(const ExpertExchangeShape& s) {
  return s.ep <= 1 ? 0.0 : kept_rows(s) * (s.ep - 1) / s.ep;
}

std::size_t over_tp_buffer_bytes(const LocalSizes& s, int ep, std::size_t elem_bytes) {
  if (ep <= 1 || s.E == 0) return 0;
  return std::size_t(ep + 2) * std::size_t(s.moe_rows) * std::size_t(s.C) * elem_bytes;
}

std::size_t exchange_buffer_bytes(const LocalSizes& s, int ep, TokenDispatcherType type, std::size_t elem_bytes) {
  if (ep <= 1 || s.E == 0) return 0;
  std::size_t rows = std::size_t(s.moe_expert_rows) + std::size_t(s.moe_rows);
  if (type == TokenDispatcherType::AllToAll)
    rows += s.E_local > 1 ? std::size_t(s.moe_expert_rows) : 0;
  else
    rows += std::size_t(ep + 1) * std::size_t(s.moe_rows);
  return rows * std::size_t(s.C) * elem_bytes;
}

std::string describe_expert_parallelism(const StageConfig& model, const ParallelArgs& p, int dp_size, int micro_batches,
                                        DType compute) {
  const MoeConfig& m = model.moe;
  const int ep = p.expert_model_parallel_size, etp = expert_tensor_parallel_size(p);
  if (!m.enabled() || (ep <= 1 && etp <= 1)) return {};
  int moe_layers = 0;  // the busiest stage's
  for (int r = 0; r < p.pipeline_model_parallel_size; ++r) {
    int n = 0;
    for (const ChunkRange& c : pipeline_chunks(p, model.num_layers, r))
      for (int l = c.first; l < c.last; ++l) n += m.is_moe_layer(l) ? 1 : 0;
    moe_layers = std::max(moe_layers, n);
  }
  ExpertExchangeShape s;
  s.tokens = model.micro_batch_size * model.seq_length;
  s.topk = m.topk;
  s.num_experts = m.num_experts;
  s.ep = ep;
  s.capacity_factor = m.capacity_factor;
  s.pad_to_capacity = m.pad_to_capacity;
  s.type = parse_token_dispatcher_type(p.moe_token_dispatcher_type);
  std::string out;
  if (experts_over_tp(p)) {
    const double rows = over_tp_rows_sent_per_gather(s);
    out = fmt::format(
        "expert parallelism over the TP ranks (ETP 1, EP {} = TP) x EDP {}: {} of {} experts per rank, whole; no "
        "token exchange; {:.2f} MB sent per rank and step gathering the experts' rows ({:.0f} rows per gather x 2 "
        "gathers x {} MoE layers x {} micro-batches; uniform routing)",
        ep, dp_size, m.num_experts / ep, m.num_experts,
        rows * 2.0 * moe_layers * micro_batches * model.hidden_size * double(dtype_size(compute)) / 1e6, rows,
        moe_layers, micro_batches);
  } else if (ep > 1) {
    const double bytes = exchange_bytes_per_step(s, moe_layers, micro_batches, model.hidden_size, dtype_size(compute));
    out = fmt::format(
        "expert parallelism: EP {} x EDP {}, {} of {} experts per rank, {} token dispatcher, {:.2f} MB sent per rank "
        "and step ({:.0f} rows per exchange x 4 exchanges x {} MoE layers x {} micro-batches; uniform routing)",
        ep, dp_size / ep, m.num_experts / ep, m.num_experts, token_dispatcher_name(s.type), bytes / 1e6,
        rows_sent_per_exchange(s), moe_layers, micro_batches);
  }
  if (etp > 1) {
    const double bytes =
        expert_partial_sum_bytes_per_step(s, etp, moe_layers, micro_batches, model.hidden_size, dtype_size(compute));
    out += fmt::format(
        "{}expert tensor parallelism: ETP {}, {} of each expert's {} ffn columns per rank, {:.2f} MB sent per rank and "
        "step in the partial-sum all-reduces ({:.0f} rows summed per step: 2 per MoE layer and micro-batch; uniform "
        "routing)",
        out.empty() ? "" : "; ", etp, m.ffn_hidden_size / etp, m.ffn_hidden_size, bytes / 1e6,
        expert_partial_sum_rows_per_step(s, moe_layers, micro_batches));
  }
  return out;
}

}  // namespace gptrain::parallel
