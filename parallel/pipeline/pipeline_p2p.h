// The point-to-point transfers of a pipeline schedule, grouped into batches per schedule step the way
// Megatron issues them (schedules.py / p2p_communication.py): a rank's op list is cut into steps
// (each warm-up forward, each steady-state (forward, backward) pair, each cool-down backward), and one
// batch runs between consecutive steps: the sends of what the previous step produced together with
// the receives of what the next step needs (send_forward_recv_forward in warm-up,
// send_forward_backward_recv_forward_backward in the steady state, send_backward_recv_backward in
// cool-down). A batch is posted as a whole (Communicator::batch_send_recv: MPI Isend/Irecv + wait, or
// one NCCL group) and completes before the next step computes, so no send needs buffering.
// There are no tags: between two ranks the k-th send meets the k-th receive, so the schedules must
// produce and consume the messages of each rank pair in the same order. Cutting the list at every op
// instead is enough for 1F1B but deadlocks the interleaved schedule. tests/unit/parallel/
// pipeline_p2p_test.cpp checks order and deadlock freedom of every schedule by simulation.
#pragma once

#include "parallel/pipeline/pipeline_schedule.h"

#include <vector>

namespace gptrain::parallel {

// One message of a pipeline step: the activation (forward) or the gradient (backward) of micro-batch
// `microbatch` that virtual stage `virtual_stage` consumes.
struct PipeMessage {
  bool forward = true;
  int microbatch = 0;
  int virtual_stage = 0;  // the receiving virtual stage
  bool operator==(const PipeMessage&) const = default;
};

struct PipeTransfer {
  bool send = false;  // false: receive
  int peer = 0;       // pipeline rank of the other side
  PipeMessage msg;
};

// A schedule step: ops [first, first + count) of the rank's list, and the batch of transfers issued
// just before them. The last step has count 0: the sends of the final op.
struct PipeStep {
  int first = 0;
  int count = 0;
  std::vector<PipeTransfer> batch;  // sends first, then receives; at most one of each direction
};

// `warmup`: leading ops that are single-op steps (pipeline_warmup; the op count for forward-only
// lists); after them a forward followed by a backward forms one step.
std::vector<PipeStep> pipeline_p2p_steps(const std::vector<PipeOp>& ops, int pp, int rank, int num_chunks, int warmup);

// Forward passes only (evaluation): micro-batch by micro-batch through the rank's chunks.
std::vector<PipeOp> forward_only_schedule(int num_microbatches, int num_chunks);

}  // namespace gptrain::parallel
