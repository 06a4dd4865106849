#include "core/train/memory_plan.h"

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/model/param_layout.h"
#include "core/model/stage_activations.h"

#include <fmt/format.h>

#include <optional>
#include <string>

namespace gptrain {

MemoryPlan memory_plan(GptStage& stage, const AdamW& opt, int in_flight) {
  const std::size_t n = stage.layout().total;
  MemoryPlan p;
  p.parameters = n * dtype_size(stage.backend().compute_dtype());
  p.gradients = n * sizeof(float);
  p.master_weights = opt.has_separate_master();
  p.optimizer = opt.size() * sizeof(float) * (p.master_weights ? 3 : 2);
  p.activations_each = StageActivations::arena_bytes_for(stage.backend(), stage.config(), stage.sizes());
  p.micro_batches_in_flight = in_flight;
  p.workspace =
      backend_workspace(stage.config(), stage.backend().compute_dtype(), workspace_options(stage.backend()), n);
  return p;
}

MemoryPlan memory_plan_for(const ModelConfig& stage, DType compute, std::size_t optimizer_elems, int in_flight,
                           const WorkspaceOptions& ws) {
  const std::size_t n = build_param_layout(stage).total;
  MemoryPlan p;
  p.parameters = n * dtype_size(compute);
  p.gradients = n * sizeof(float);
  p.master_weights = compute != DType::F32;
  p.optimizer = optimizer_elems * sizeof(float) * (p.master_weights ? 3 : 2);
  p.activations_each = StageActivations::arena_bytes_for(compute, stage, local_sizes(stage));
  p.micro_batches_in_flight = in_flight;
  p.workspace = backend_workspace(stage, compute, ws, n);
  return p;
}

std::string format_bytes(std::size_t bytes) {
  const double b = double(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  return fmt::format("{:.2f} MiB", b / (1024.0 * 1024));
}

void check_memory_plan_fits(const MemoryPlan& p, const Backend& be) {
  if (std::string(be.name()) != "cuda") return;
  const std::optional<DeviceMemory> m = be.device_memory();
  if (!m) return;
  const std::size_t acts = p.activations_each * std::size_t(p.micro_batches_in_flight);
  // cuBLASLt's workspace was allocated with the backend, so it is already out of m->free.
  const std::size_t scratch = p.workspace.scratch + p.workspace.attention;
  const char* at_least = p.workspace.plan_workspace_unknown ? "at least " : "";
  log::info("memory plan: GPU has {} free of {} after parameters, gradients and optimizer state; activations need {}, "
            "workspace still to allocate {}{}",
            format_bytes(m->free), format_bytes(m->total), format_bytes(acts), at_least, format_bytes(scratch));
  check(acts + scratch <= m->free,
        "memory plan: the activations ({} = {} per micro-batch x {} in flight) and the workspace still to allocate "
        "({}{}) do not fit in the {} the GPU has free after parameters, gradients and optimizer state ({}): lower "
        "--micro-batch-size (activations and workspace scale with it), or split the model with "
        "--tensor-model-parallel-size / --pipeline-model-parallel-size "
        "(activation recomputation, --recompute-*, is not available in gptrain)",
        format_bytes(acts), format_bytes(p.activations_each), p.micro_batches_in_flight, at_least,
        format_bytes(scratch), format_bytes(m->free), format_bytes(p.parameters + p.gradients + p.optimizer));
}

std::string format_memory_plan(const MemoryPlan& p) {
  return fmt::format(
      "memory plan: parameters {}, gradients {}, optimizer state {} (moments{}), activations {} "
      "({} per micro-batch x {} in flight), workspace {}{} ({}), total {}{}",
      format_bytes(p.parameters), format_bytes(p.gradients), format_bytes(p.optimizer),
      p.master_weights ? " + fp32 master weights" : "",
      format_bytes(p.activations_each * std::size_t(p.micro_batches_in_flight)), format_bytes(p.activations_each),
      p.micro_batches_in_flight, p.workspace.plan_workspace_unknown ? ">= " : "", format_bytes(p.workspace.total()),
      describe_workspace(p.workspace), p.workspace.plan_workspace_unknown ? ">= " : "", format_bytes(p.total()));
}

}  // namespace gptrain
