#include "parallel/train/parallel_runner.h"

#include "core/common/error.h"
#include "core/common/profile_range.h"
#include "parallel/data_parallel/weight_hash_check.h"
#include "parallel/train/distributed_checkpoint.h"

namespace gptrain::parallel {

ParallelRunner::ParallelRunner(DistributedGpt& model, DataParallelOptimizer& opt) : model_(model), opt_(opt) {}

LossTotals ParallelRunner::train_batch(std::vector<HostMicroBatch>& mbs, double loss_scale, LossNormalization norm) {
  ProfileRange range("forward-backward");
  model_.zero_grads();
  const LossTotals l = model_.run_pipeline(mbs, true, loss_scale, norm);
  // Megatron moves the expert bias when it finalizes the step's gradients, before (and whether or not) the
  // optimizer steps: the next step routes with the new bias.
  model_.update_expert_bias(l.moe);
  // Delayed FP8 scaling: the step's amaxes enter the histories and give the next step's scales.
  model_.update_fp8_scales();
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

void ParallelRunner::start_async_save(const std::string& save_dir, checkpoint::Step step,
                                      const checkpoint::Metadata& meta, bool save_optim) {
  check(!pending_save_, "internal: an async save started while another one is pending");
  pending_save_ = std::make_unique<BackgroundSave>(snapshot_for_save(save_dir, step, model_, opt_, meta, save_optim));
}

std::optional<checkpoint::Step> ParallelRunner::finish_async_save(bool wait) {
  if (!pending_save_) return std::nullopt;
  if (!wait && any_rank(!pending_save_->written())) return std::nullopt;
  const std::unique_ptr<BackgroundSave> save = std::move(pending_save_);
  const std::optional<std::string> error = save->wait();
  commit_snapshot(save->snapshot(), model_.comms().host_world(), error);
  return snapshot_step(save->snapshot());
}

void ParallelRunner::load(const checkpoint::Checkpoint& ck, bool load_optim) {
  load_distributed_checkpoint(ck, model_, opt_, load_optim);
}

void ParallelRunner::upcycle(const checkpoint::Checkpoint& ck) { upcycle_dense_checkpoint(ck, model_, opt_); }

std::optional<std::string> ParallelRunner::weight_hash_mismatch(int64_t iteration) {
  opt_.finish_param_gather();  // as Megatron, which waits for the parameter all-gathers first
  maybe_corrupt_weight_for_test(model_, iteration);
  return parallel::weight_hash_mismatch(model_);
}

bool ParallelRunner::any_rank(bool flag) {
  int32_t v = flag ? 1 : 0;
  model_.comms().host_world().all_reduce(&v, 1, ElemType::I32, ReduceOp::Max);
  return v != 0;
}

void ParallelRunner::max_across_ranks(std::vector<double>& values) {
  if (!values.empty())
    model_.comms().host_world().all_reduce(values.data(), values.size(), ElemType::F64, ReduceOp::Max);
}

std::optional<std::string> ParallelRunner::agree_on_error(const std::optional<std::string>& mine) {
  return parallel::agree_on_error(model_.comms().host_world(), mine);
}

}  // namespace gptrain::parallel
