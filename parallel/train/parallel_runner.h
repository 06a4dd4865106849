// ParallelRunner: the training loop's ModelRunner (core/train/model_runner.h) for any TP x PP x DP
// layout, so pretrain_gpt's loop, logging, schedules and checkpoint metadata stay the same as in one
// process. It forwards to DistributedGpt (pipeline schedule, TP hooks, model-parallel gradient sync)
// and DataParallelOptimizer (DP reduction, distributed optimizer, AdamW), and to the sharded
// checkpoint functions.
//
// What pretrain_gpt does with it (world > 1, or TP/PP > 1):
//   ProcessGrid grid(mpi.world_size(), mpi.rank(), popts.grid_sizes());
//   CommOptions copt{deterministic, popts.timeout_seconds(), backend.get()};
//   GridComms comms = make_grid_comms(grid, copt, resolve_comm_backend(popts, backend->name()));
//   DistributedGpt model(cfg, args.make_vocab_size_divisible_by, popts, grid, comms, *backend);
//   model.init_parameters();
//   DataParallelOptimizer opt(model, popts.use_distributed_optimizer);
//   ParallelRunner runner(model, opt, {beta1, beta2, eps});
// and hands each DP rank its micro-batches of the global batch (megatron-compat.md §2.4).
#pragma once

#include "core/train/model_runner.h"
#include "parallel/data_parallel/dp_optimizer.h"

namespace gptrain::parallel {

class ParallelRunner final : public ModelRunner {
 public:
  ParallelRunner(DistributedGpt& model, DataParallelOptimizer& opt, AdamWConfig hyper = {});

  LossTotals train_batch(std::vector<HostMicroBatch>& micro_batches, double loss_scale) override;
  LossTotals eval_batch(std::vector<HostMicroBatch>& micro_batches) override;
  double grad_sum_squares() override { return opt_.grad_sum_squares(); }
  void optimizer_step(float lr, float weight_decay, float grad_scale) override;
  int64_t optimizer_steps() const override { return opt_.steps(); }
  void set_optimizer_steps(int64_t steps) override { opt_.set_steps(steps); }
  void save(const std::string& save_dir, checkpoint::Step step, const checkpoint::Metadata& meta,
            bool save_optim) override;
  void load(const checkpoint::Checkpoint& ck, bool load_optim) override;

 private:
  DistributedGpt& model_;
  DataParallelOptimizer& opt_;
  AdamWConfig hyper_;
};

}  // namespace gptrain::parallel
