// The single-process ModelRunner: one GptStage holding the whole model, one AdamW.
#pragma once

#include "core/optim/adamw.h"
#include "core/train/model_runner.h"

#include <memory>

namespace gptrain {

struct StageActivations;

class LocalRunner final : public ModelRunner {
 public:
  LocalRunner(GptStage& stage, AdamW& optimizer);
  ~LocalRunner() override;

  LossTotals train_batch(std::vector<HostMicroBatch>& micro_batches, double loss_scale) override;
  LossTotals eval_batch(std::vector<HostMicroBatch>& micro_batches) override;
  double grad_sum_squares() override { return opt_.grad_sum_squares(); }
  void optimizer_step(float lr, float weight_decay, float grad_scale) override { opt_.step(lr, weight_decay, grad_scale); }
  int64_t optimizer_steps() const override { return opt_.steps(); }
  void set_optimizer_steps(int64_t steps) override { opt_.set_steps(steps); }
  void save(const std::string& save_dir, checkpoint::Step step, const checkpoint::Metadata& meta,
            bool save_optim) override;
  void load(const checkpoint::Checkpoint& ck, bool load_optim) override;

 private:
  GptStage& stage_;
  AdamW& opt_;
  std::unique_ptr<StageActivations> acts_;
};

// Host fp32 copies of a stage's parameters and optimizer state as checkpoint tensors (global names,
// TP slices). Shared with the parallel runners.
struct StageTensorsHost {
  std::vector<float> params, exp_avg, exp_avg_sq, master;
  std::vector<checkpoint::NamedTensor> model, optim;
};
// Copies the stage's parameters (and, with opt non-null, exp_avg / exp_avg_sq / master (bf16/fp16 only)).
// Tied copies (the last pipeline stage's word embeddings) are left out: the first stage saves them.
void gather_stage_tensors(GptStage& stage, AdamW* opt, StageTensorsHost& out);
// Loads exp_avg/exp_avg_sq (and masters when the checkpoint has them; else masters = parameters).
void load_optimizer_state(GptStage& stage, AdamW& opt, const checkpoint::Checkpoint& ck);

}  // namespace gptrain
