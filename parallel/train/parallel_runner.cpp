#include "parallel/train/parallel_runner.h"

#include "core/common/profile_range.h"
#include "parallel/train/distributed_checkpoint.h"

namespace gptrain::parallel {

ParallelRunner::ParallelRunner(DistributedGpt& model, DataParallelOptimizer& opt) : model_(model), opt_(opt) {}

LossTotals ParallelRunner::train_batch(std::vector<HostMicroBatch>& mbs, double loss_scale, LossNormalization norm) {
  ProfileRange range("forward-backward");
  model_.zero_grads();
  const LossTotals l = model_.run_pipeline(mbs, true, loss_scale, norm);
  ProfileRange mp_range("model-parallel-grad-sync");
  model_.finish_model_parallel_grads();
  mp_range.end();
  ProfileRange dp_range("dp-grad-reduce");
  opt_.reduce_gradients();
  return l;
}

LossTotals ParallelRunner::eval_batch(std::vector<HostMicroBatch>& mbs) { return model_.run_pipeline(mbs, false); }

void ParallelRunner::optimizer_step(float lr, float decoupled_lr, float weight_decay, float grad_scale) {
  opt_.apply(lr, decoupled_lr, weight_decay, grad_scale);
}

void ParallelRunner::save(const std::string& save_dir, checkpoint::Step step, const checkpoint::Metadata& meta,
                          bool save_optim) {
  save_distributed_checkpoint(save_dir, step, model_, opt_, meta, save_optim);
}

void ParallelRunner::load(const checkpoint::Checkpoint& ck, bool load_optim) {
  load_distributed_checkpoint(ck, model_, opt_, load_optim);
}

bool ParallelRunner::any_rank(bool flag) {
  int32_t v = flag ? 1 : 0;
  model_.comms().host_world().all_reduce(&v, 1, ElemType::I32, ReduceOp::Max);
  return v != 0;
}

}  // namespace gptrain::parallel
