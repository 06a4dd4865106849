// The parallelism flags (Megatron names, megatron-compat.md §3) and their validation. The training
// app registers them with add_parallel_flags() next to its own flags; tools (preflight) reuse them.
#pragma once

#include "parallel/grid/grid.h"

#include <cstdint>
#include <optional>
#include <string>

namespace CLI {
class App;
}

namespace gptrain::parallel {

struct ParallelOptions {
  int tensor_model_parallel_size = 1;
  int pipeline_model_parallel_size = 1;
  int context_parallel_size = 1;       // reserved: only 1
  int expert_model_parallel_size = 1;  // reserved: only 1
  std::optional<int> num_layers_per_virtual_pipeline_stage;
  std::optional<int> num_virtual_stages_per_pipeline_rank;
  std::optional<int> decoder_first_pipeline_num_layers;
  std::optional<int> decoder_last_pipeline_num_layers;
  bool sequence_parallel = false;
  bool use_distributed_optimizer = false;
  bool overlap_grad_reduce = false;   // DP bucket reductions start during backward (grad_sync.h)
  bool overlap_param_gather = false;  // distributed optimizer: parameter gathers waited for in the next forward
  std::optional<int64_t> ddp_bucket_size;  // elements per DP gradient bucket; default max(40M, 1M x DP)
  std::string distributed_backend = "auto";  // auto | nccl | mpi  (auto: nccl for cuda, mpi for cpu)
  double distributed_timeout_minutes = 10.0;
  bool deterministic_mode = false;  // collectives reduce in rank order (bitwise reproducible)

  GridSizes grid_sizes() const;
  double timeout_seconds() const { return distributed_timeout_minutes * 60.0; }
};

void add_parallel_flags(CLI::App& app, ParallelOptions& o);

// Flag-level checks that need no model (sizes >= 1, exclusive flags, backend names). Throws Error.
void validate_parallel_options(const ParallelOptions& o);

// "nccl" or "mpi" for a compute backend name ("cpu" | "cuda"), honouring --distributed-backend.
std::string resolve_comm_backend(const ParallelOptions& o, const std::string& compute_backend);

}  // namespace gptrain::parallel

namespace gptrain {
struct TrainArgs;
}
namespace gptrain::parallel {
// The parallel options of pretrain_gpt's parsed flags (core/config/train_args.h); flags TrainArgs
// does not carry keep their defaults (auto backend: MPI on CPU, NCCL on CUDA).
ParallelOptions parallel_options_from(const TrainArgs& a);
}  // namespace gptrain::parallel
