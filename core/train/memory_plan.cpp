#include "core/train/memory_plan.h"

#include "core/model/stage_activations.h"

#include <fmt/format.h>

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
  return p;
}

namespace {

std::string human(std::size_t bytes) {
  const double b = double(bytes);
  if (b >= 1024.0 * 1024 * 1024) return fmt::format("{:.2f} GiB", b / (1024.0 * 1024 * 1024));
  return fmt::format("{:.2f} MiB", b / (1024.0 * 1024));
}

}  // namespace

std::string format_memory_plan(const MemoryPlan& p) {
  return fmt::format("memory plan: parameters {}, gradients {}, optimizer state {} (moments{}), activations {} "
                     "({} per micro-batch x {} in flight), total {}",
                     human(p.parameters), human(p.gradients), human(p.optimizer),
                     p.master_weights ? " + fp32 master weights" : "",
                     human(p.activations_each * std::size_t(p.micro_batches_in_flight)), human(p.activations_each),
                     p.micro_batches_in_flight, human(p.total()));
}

}  // namespace gptrain
