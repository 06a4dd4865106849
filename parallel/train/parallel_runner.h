// ParallelRunner: the training loop's ModelRunner (core/train/model_runner.h) for every layout, a single
// process being the world of one: it forwards to DistributedGpt (pipeline schedule, TP hooks,
// model-parallel gradient sync), to DataParallelOptimizer (DP reduction, distributed optimizer, AdamW)
// and to the sharded checkpoint functions. pretrain_gpt builds it in parallel/train/pretrain.cpp.
#pragma once

#include "core/train/model_runner.h"
#include "parallel/data_parallel/dp_optimizer.h"
#include "parallel/train/background_save.h"

#include <memory>

namespace gptrain::parallel {

class ParallelRunner final : public ModelRunner {
 public:
  ParallelRunner(DistributedGpt& model, DataParallelOptimizer& opt);

  LossTotals train_batch(std::vector<HostMicroBatch>& micro_batches, double loss_scale,
                         LossNormalization norm) override;
  LossTotals eval_batch(std::vector<HostMicroBatch>& micro_batches) override;
  double grad_sum_squares() override { return opt_.grad_sum_squares(); }
  double params_sum_squares() override { return opt_.params_sum_squares(); }
  int64_t grad_zeros() override { return opt_.grad_zeros(); }
  std::optional<std::string> weight_hash_mismatch(int64_t iteration) override;
  void optimizer_step(float lr, float decoupled_lr, float weight_decay, float grad_scale) override;
  int64_t optimizer_steps() const override { return opt_.steps(); }
  void set_optimizer_steps(int64_t steps) override { opt_.set_steps(steps); }
  void save(const std::string& save_dir, checkpoint::Step step, const checkpoint::Metadata& meta,
            bool save_optim) override;
  void start_async_save(const std::string& save_dir, checkpoint::Step step, const checkpoint::Metadata& meta,
                        bool save_optim) override;
  std::optional<checkpoint::Step> finish_async_save(bool wait) override;
  bool async_save_pending() const override { return pending_save_ != nullptr; }
  void load(const checkpoint::Checkpoint& ck, bool load_optim) override;
  void upcycle(const checkpoint::Checkpoint& ck) override;
  bool any_rank(bool flag) override;
  std::optional<std::string> agree_on_error(const std::optional<std::string>& mine) override;
  AllocatedBytes allocated_bytes() override { return model_.backend().allocated_bytes(); }
  std::optional<DeviceMemory> device_memory() override { return model_.backend().device_memory(); }
  void synchronize() override { model_.backend().synchronize(); }
  void max_across_ranks(std::vector<double>& values) override;

 private:
  DistributedGpt& model_;
  DataParallelOptimizer& opt_;
  std::unique_ptr<BackgroundSave> pending_save_;
};

}  // namespace gptrain::parallel
