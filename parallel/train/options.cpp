#include "parallel/train/options.h"

#include "core/common/error.h"

#include <CLI/CLI.hpp>

namespace gptrain::parallel {

GridSizes ParallelOptions::grid_sizes() const {
  GridSizes s;
  s.tp = tensor_model_parallel_size;
  s.pp = pipeline_model_parallel_size;
  s.cp = context_parallel_size;
  s.ep = expert_model_parallel_size;
  return s;
}

void add_parallel_flags(CLI::App& app, ParallelOptions& o) {
  const char* g = "Distributed";
  app.add_option("--tensor-model-parallel-size", o.tensor_model_parallel_size, "TP: ranks that split each layer")
      ->group(g);
  app.add_option("--pipeline-model-parallel-size", o.pipeline_model_parallel_size, "PP: pipeline stages")->group(g);
  app.add_option("--context-parallel-size", o.context_parallel_size, "CP (only 1 is supported)")->group(g);
  app.add_option("--expert-model-parallel-size", o.expert_model_parallel_size, "EP (only 1 is supported)")->group(g);
  app.add_option("--num-layers-per-virtual-pipeline-stage", o.num_layers_per_virtual_pipeline_stage,
                 "interleaved pipeline: layers per virtual stage")
      ->group(g);
  app.add_option("--num-virtual-stages-per-pipeline-rank", o.num_virtual_stages_per_pipeline_rank,
                 "interleaved pipeline: model chunks per pipeline rank")
      ->group(g);
  app.add_option("--decoder-first-pipeline-num-layers", o.decoder_first_pipeline_num_layers,
                 "layers on the first pipeline stage (uneven split)")
      ->group(g);
  app.add_option("--decoder-last-pipeline-num-layers", o.decoder_last_pipeline_num_layers,
                 "layers on the last pipeline stage (uneven split)")
      ->group(g);
  app.add_flag("--sequence-parallel", o.sequence_parallel, "shard norm/dropout activations over TP along the sequence")
      ->group(g);
  app.add_flag("--use-distributed-optimizer", o.use_distributed_optimizer,
               "shard optimizer state and master weights over DP")
      ->group(g);
  app.add_flag("--overlap-grad-reduce", o.overlap_grad_reduce, "overlap DP gradient reduction with backward")->group(g);
  app.add_flag("--overlap-param-gather", o.overlap_param_gather, "overlap parameter all-gather with forward")->group(g);
  app.add_option("--ddp-bucket-size", o.ddp_bucket_size, "elements per DP gradient bucket (default max(40M, 1M x DP))")
      ->group(g);
  app.add_option("--distributed-backend", o.distributed_backend, "auto | nccl | mpi")
      ->check(CLI::IsMember({"auto", "nccl", "mpi"}))
      ->group(g);
  app.add_option("--distributed-timeout-minutes", o.distributed_timeout_minutes,
                 "a collective waiting longer than this ends the job with a message")
      ->group(g);
  app.add_flag("--deterministic-mode", o.deterministic_mode, "reductions summed in rank order (bitwise reproducible)")
      ->group(g);
}

void validate_parallel_options(const ParallelOptions& o) {
  check(o.tensor_model_parallel_size >= 1, "--tensor-model-parallel-size must be >= 1, got {}",
        o.tensor_model_parallel_size);
  check(o.pipeline_model_parallel_size >= 1, "--pipeline-model-parallel-size must be >= 1, got {}",
        o.pipeline_model_parallel_size);
  check(o.context_parallel_size == 1, "--context-parallel-size {} is not supported yet (must be 1)",
        o.context_parallel_size);
  check(o.expert_model_parallel_size == 1, "--expert-model-parallel-size {} is not supported yet (must be 1)",
        o.expert_model_parallel_size);
  check(!(o.num_layers_per_virtual_pipeline_stage && o.num_virtual_stages_per_pipeline_rank),
        "give only one of --num-layers-per-virtual-pipeline-stage and --num-virtual-stages-per-pipeline-rank");
  const bool interleaved = o.num_layers_per_virtual_pipeline_stage || o.num_virtual_stages_per_pipeline_rank;
  if (interleaved)
    check(o.pipeline_model_parallel_size > 1, "an interleaved (virtual) pipeline needs --pipeline-model-parallel-size > 1");
  if (o.num_layers_per_virtual_pipeline_stage)
    check(*o.num_layers_per_virtual_pipeline_stage >= 1, "--num-layers-per-virtual-pipeline-stage must be >= 1");
  if (o.num_virtual_stages_per_pipeline_rank)
    check(*o.num_virtual_stages_per_pipeline_rank >= 1, "--num-virtual-stages-per-pipeline-rank must be >= 1");
  const bool uneven = o.decoder_first_pipeline_num_layers || o.decoder_last_pipeline_num_layers;
  if (uneven) {
    check(o.pipeline_model_parallel_size > 1,
          "--decoder-first/last-pipeline-num-layers need --pipeline-model-parallel-size > 1");
    check(!interleaved, "--decoder-first/last-pipeline-num-layers with an interleaved pipeline is not supported yet");
  }
  check(!o.ddp_bucket_size || *o.ddp_bucket_size >= 1, "--ddp-bucket-size must be >= 1 element, got {}",
        o.ddp_bucket_size.value_or(0));
  check(!o.overlap_param_gather || o.use_distributed_optimizer,
        "--overlap-param-gather needs --use-distributed-optimizer (as Megatron)");
  check(!o.overlap_param_gather || o.overlap_grad_reduce,
        "--overlap-param-gather needs --overlap-grad-reduce (as Megatron)");
  check(o.distributed_timeout_minutes > 0, "--distributed-timeout-minutes must be > 0, got {}",
        o.distributed_timeout_minutes);
}

std::string resolve_comm_backend(const ParallelOptions& o, const std::string& compute_backend) {
  if (o.distributed_backend == "auto") return compute_backend == "cuda" ? "nccl" : "mpi";
  if (o.distributed_backend == "nccl")
    check(compute_backend == "cuda", "--distributed-backend nccl needs the cuda backend (got {})", compute_backend);
  return o.distributed_backend;
}

}  // namespace gptrain::parallel
