#include "parallel/train/parallel_runner.h"

#include "parallel/train/distributed_checkpoint.h"

namespace gptrain::parallel {

ParallelRunner::ParallelRunner(DistributedGpt& model, DataParallelOptimizer& opt, AdamWConfig hyper)
    : model_(model), opt_(opt), hyper_(hyper) {}

LossTotals ParallelRunner::train_batch(std::vector<HostMicroBatch>& mbs, double loss_scale) {
  model_.zero_grads();
  const DistributedGpt::StepLoss l = model_.run_pipeline(mbs, true, static_cast<float>(loss_scale));
  model_.finish_model_parallel_grads();
  opt_.reduce_gradients();
  LossTotals t;
  t.loss_sum = l.loss_sum;
  t.num_tokens = l.num_tokens;
  return t;
}

LossTotals ParallelRunner::eval_batch(std::vector<HostMicroBatch>& mbs) {
  const DistributedGpt::StepLoss l = model_.run_pipeline(mbs, false);
  LossTotals t;
  t.loss_sum = l.loss_sum;
  t.num_tokens = l.num_tokens;
  return t;
}

void ParallelRunner::optimizer_step(float lr, float weight_decay, float grad_scale) {
  opt_.apply(lr, weight_decay, grad_scale, hyper_);
}

void ParallelRunner::save(const std::string& save_dir, checkpoint::Step step, const checkpoint::Metadata& meta,
                          bool save_optim) {
  save_distributed_checkpoint(save_dir, step, model_, opt_, meta, save_optim);
}

void ParallelRunner::load(const checkpoint::Checkpoint& ck, bool load_optim) {
  load_distributed_checkpoint(ck, model_, opt_, load_optim);
}

}  // namespace gptrain::parallel
