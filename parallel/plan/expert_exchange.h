// The token traffic of expert parallelism, for --dry-run and the memory plan: how many rows of C
// activations an EP rank sends to the other EP ranks, under uniform routing (every expert chosen by
// N * K / E of a rank's N tokens; real routing is skewed, so this is the balanced case).
#pragma once

#include "core/config/parallel_args.h"
#include "core/model/model_config.h"
#include "parallel/moe/token_dispatcher.h"

#include <cstdint>
#include <string>

namespace gptrain::parallel {

struct ExpertExchangeShape {
  int tokens = 0;                // N: tokens of one micro-batch on this rank (B * T)
  int topk = 1;                  // K
  int num_experts = 1;           // E
  int ep = 1;                    // EP
  double capacity_factor = -1;   // < 0: dropless
  bool pad_to_capacity = false;  // --moe-pad-expert-input-to-capacity
  TokenDispatcherType type = TokenDispatcherType::AllGather;
};

// Rows of one MoE layer call that leave this rank in one exchange (a dispatch, or a combine).
// alltoall: the kept rows routed to other ranks' experts, R * (EP - 1) / EP; allgather: the whole
// permuted buffer to each of the EP - 1 others, R * (EP - 1).
double rows_sent_per_exchange(const ExpertExchangeShape& s);

// Bytes this rank sends per training step: 4 exchanges per MoE layer and micro-batch (dispatch and
// combine forward, and again backward), `moe_layers` of them on this rank, `micro_batches` per step,
// rows of C elements of `elem_bytes`. A recomputed MoE layer replays its 2 forward exchanges (not counted).
double exchange_bytes_per_step(const ExpertExchangeShape& s, int moe_layers, int micro_batches, int C,
                               std::size_t elem_bytes);

// Expert tensor parallelism (ETP = TP): every MoE layer call sums its experts' partial results over the ETP
// group twice (the fc2 outputs forward, the fc1 input gradients backward), each an in-place all-reduce of the
// rows the local experts computed (under uniform routing the kept rows of one rank's tokens, as for EP). The
// all-reduce is a reduce-scatter then an all-gather, so a rank sends 2 (ETP - 1) / ETP of the rows.
// Rows summed per step (the elements a rank hands to the all-reduces, divided by C), and bytes sent.
double expert_partial_sum_rows_per_step(const ExpertExchangeShape& s, int moe_layers, int micro_batches);
double expert_partial_sum_bytes_per_step(const ExpertExchangeShape& s, int etp, int moe_layers, int micro_batches,
                                         int C, std::size_t elem_bytes);

// Device bytes of the expert-parallel exchange buffers at their largest (ExpertParallelHooks: the experts'
// rows and the returned permuted rows; TokenDispatcher: its staging), for rows of elem_bytes x C:
//   moe_expert_rows + moe_rows, plus alltoall: moe_expert_rows when a rank holds more than one expert
//   (reordering by expert), allgather: (EP + 1) x moe_rows (the gathered buffers, one block per rank,
//   and the reduce-scattered block).
std::size_t exchange_buffer_bytes(const LocalSizes& s, int ep, TokenDispatcherType type, std::size_t elem_bytes);

// Experts over the TP ranks (ETP 1, EP = TP; TpExpertHooks): no token moves; each exchange back gathers every
// rank's experts' rows, padded to the largest block, which under uniform routing is R / EP of the R kept rows,
// so a rank sends R (EP - 1) / EP rows per gather, 2 gathers per MoE layer and micro-batch (forward outputs,
// backward input gradients). Buffers: its padded block, the EP gathered blocks and the whole returned buffer,
// (EP + 2) x moe_rows at most.
double over_tp_rows_sent_per_gather(const ExpertExchangeShape& s);
std::size_t over_tp_buffer_bytes(const LocalSizes& s, int ep, std::size_t elem_bytes);

// "expert parallelism: EP 2 x EDP 2, 4 of 8 experts per rank, alltoall token dispatcher, ~1.5 MB sent per rank
// and step (uniform routing; the busiest pipeline stage's MoE layers)", then with ETP > 1 "; expert tensor
// parallelism: ETP 2, ..."; empty without MoE layers or with neither EP nor ETP.
std::string describe_expert_parallelism(const StageConfig& model, const ParallelArgs& p, int dp_size, int micro_batches,
                                        DType compute);

}  // namespace gptrain::parallel
