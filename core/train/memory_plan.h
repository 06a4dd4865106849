// The memory plan printed before step 1: bytes of each kind of training state, taken from the arenas
// the model and optimizer allocate (ParamLayout, AdamW, StageActivations), so it matches what the
// backend holds, and the backend's own scratch (core/train/backend_workspace.h).
#pragma once

#include "core/model/gpt_stage.h"
#include "core/optim/adamw.h"
#include "core/train/backend_workspace.h"

#include <cstddef>
#include <string>

namespace gptrain {

struct MemoryPlan {
  std::size_t parameters = 0;         // layout().total elements in the compute dtype
  std::size_t gradients = 0;          // fp32 main grads
  std::size_t optimizer = 0;          // fp32 moments m, v (+ fp32 master weights with bf16/fp16)
  bool master_weights = false;        // optimizer includes separate fp32 master weights
  std::size_t activations_each = 0;   // one micro-batch's activation arena
  int micro_batches_in_flight = 1;
  BackendWorkspace workspace;         // the backend's scratch (a lower bound when cuDNN's plan workspace is unknown)
  std::size_t total() const {
    return parameters + gradients + optimizer + activations_each * std::size_t(micro_batches_in_flight) +
           workspace.total();
  }
};

// in_flight: activation arenas alive at once (1 without a pipeline).
MemoryPlan memory_plan(GptStage& stage, const AdamW& opt, int in_flight);

// The same plan from a finalized stage config alone, allocating nothing (pretrain_gpt --dry-run):
// parameters in `compute`, fp32 gradients, optimizer state over `optimizer_elems` elements (the
// stage's parameter count, or its shard with the distributed optimizer; fp32 master weights when
// `compute` is not fp32, as AdamW keeps them), `in_flight` activation arenas, the workspace of the
// backend `ws` describes.
MemoryPlan memory_plan_for(const ModelConfig& stage, DType compute, std::size_t optimizer_elems, int in_flight,
                           const WorkspaceOptions& ws);

// On the CUDA backend, called after parameters, gradients and optimizer state are allocated and
// before the activation arenas: logs the device's free memory and fails, naming the flags to change,
// when the activations and the workspace still to come (the reduction and cuDNN attention scratch;
// cuBLASLt's is allocated with the backend) will not fit. Nothing to check on the CPU backend.
void check_memory_plan_fits(const MemoryPlan& p, const Backend& be);

// "memory plan: parameters 1.2 MiB, gradients ..., total ..." (one line).
std::string format_memory_plan(const MemoryPlan& p);

// "12.34 MiB" / "1.23 GiB": the unit every memory-plan line uses.
std::string format_bytes(std::size_t bytes);

}  // namespace gptrain
