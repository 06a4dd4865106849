#include "core/config/train_args.h"
#include "parallel/train/options.h"

namespace gptrain::parallel {

ParallelOptions parallel_options_from(const TrainArgs& a) {
  ParallelOptions o;
  o.tensor_model_parallel_size = a.tensor_model_parallel_size;
  o.pipeline_model_parallel_size = a.pipeline_model_parallel_size;
  o.context_parallel_size = a.context_parallel_size;
  o.sequence_parallel = a.sequence_parallel;
  o.use_distributed_optimizer = a.use_distributed_optimizer;
  o.overlap_grad_reduce = a.overlap_grad_reduce;
  o.overlap_param_gather = a.overlap_param_gather;
  o.ddp_bucket_size = a.ddp_bucket_size;
  o.num_layers_per_virtual_pipeline_stage = a.num_layers_per_virtual_pipeline_stage;
  o.decoder_first_pipeline_num_layers = a.decoder_first_pipeline_num_layers;
  o.decoder_last_pipeline_num_layers = a.decoder_last_pipeline_num_layers;
  o.distributed_timeout_minutes = a.distributed_timeout_minutes;
  return o;
}

}  // namespace gptrain::parallel
