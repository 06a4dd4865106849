#include "core/train/local_runner.h"

#include "core/checkpoint/stage_weights.h"
#include "core/common/error.h"
#include "core/model/stage_activations.h"

namespace gptrain {

LocalRunner::LocalRunner(GptStage& stage, AdamW& optimizer)
    : stage_(stage), opt_(optimizer), acts_(stage.make_activations()) {}

LocalRunner::~LocalRunner() = default;

namespace {

double mask_sum(const HostMicroBatch& mb) {
  double s = 0;
  for (float m : mb.loss_mask) s += m;
  return s;
}

}  // namespace

LossTotals LocalRunner::train_batch(std::vector<HostMicroBatch>& mbs, double loss_scale) {
  stage_.zero_grads();
  LossTotals total;
  for (const HostMicroBatch& mb : mbs) {
    stage_.load_batch(*acts_, mb);
    stage_.forward(*acts_, nullptr, true);
    const GptStage::LossSum ls = stage_.loss_sum(*acts_);
    total.loss_sum += ls.loss_sum;
    total.num_tokens += ls.num_tokens;
    const double tokens = mask_sum(mb);
    const double w = tokens > 0 ? loss_scale / (tokens * double(mbs.size())) : 0.0;
    stage_.backward(*acts_, nullptr, float(w));
  }
  return total;
}

LossTotals LocalRunner::eval_batch(std::vector<HostMicroBatch>& mbs) {
  LossTotals total;
  for (const HostMicroBatch& mb : mbs) {
    stage_.load_batch(*acts_, mb);
    stage_.forward(*acts_, nullptr, false);
    const GptStage::LossSum ls = stage_.loss_sum(*acts_);
    total.loss_sum += ls.loss_sum;
    total.num_tokens += ls.num_tokens;
  }
  return total;
}

void gather_stage_tensors(GptStage& stage, AdamW* opt, StageTensorsHost& out) {
  Backend& be = stage.backend();
  const auto& layout = stage.layout();
  const std::size_t n = layout.total;
  out.params.resize(n);
  if (be.compute_dtype() == DType::F32) {
    be.copy_to_host(out.params.data(), stage.params(), n * 4);
  } else {
    float* tmp = static_cast<float*>(be.alloc(std::max<std::size_t>(n, 1) * 4));
    be.convert(tmp, DType::F32, stage.params(), be.compute_dtype(), n);
    be.copy_to_host(out.params.data(), tmp, n * 4);
    be.release(tmp);
  }
  out.model.clear();
  out.optim.clear();
  if (opt) {
    out.exp_avg.resize(n), out.exp_avg_sq.resize(n);
    be.copy_to_host(out.exp_avg.data(), opt->exp_avg(), n * 4);
    be.copy_to_host(out.exp_avg_sq.data(), opt->exp_avg_sq(), n * 4);
    if (opt->has_separate_master()) {
      out.master.resize(n);
      be.copy_to_host(out.master.data(), opt->master(), n * 4);
    }
  }
  for (const auto& t : layout.tensors) {
    if (t.tied_copy) continue;
    const auto slice = checkpoint::param_slice(t);
    out.model.push_back({t.name, t.local_shape, out.params.data() + t.offset, slice});
    if (!opt) continue;
    out.optim.push_back({"exp_avg." + t.name, t.local_shape, out.exp_avg.data() + t.offset, slice});
    out.optim.push_back({"exp_avg_sq." + t.name, t.local_shape, out.exp_avg_sq.data() + t.offset, slice});
    if (opt->has_separate_master())
      out.optim.push_back({"master." + t.name, t.local_shape, out.master.data() + t.offset, slice});
  }
}

void load_optimizer_state(GptStage& stage, AdamW& opt, const checkpoint::Checkpoint& ck) {
  using checkpoint::Checkpoint;
  check(ck.has_optim(), "{}: the checkpoint has no optimizer state (saved with --no-save-optim?); pass --no-load-optim "
        "or --finetune to start the optimizer fresh", ck.dir());
  Backend& be = stage.backend();
  const auto& layout = stage.layout();
  const std::size_t n = layout.total;
  std::vector<float> m(n), v(n), master;
  const bool ck_master = !layout.tensors.empty() && ck.has(Checkpoint::Kind::optim, "master." + layout.tensors[0].name);
  if (ck_master) master.resize(n);
  std::vector<checkpoint::NamedTensor> want;
  for (const auto& t : layout.tensors) {
    const auto slice = checkpoint::param_slice(t);
    want.push_back({"exp_avg." + t.name, t.local_shape, m.data() + t.offset, slice});
    want.push_back({"exp_avg_sq." + t.name, t.local_shape, v.data() + t.offset, slice});
    if (ck_master) want.push_back({"master." + t.name, t.local_shape, master.data() + t.offset, slice});
  }
  ck.load(Checkpoint::Kind::optim, want, false);
  be.copy_to_device(opt.exp_avg(), m.data(), n * 4);
  be.copy_to_device(opt.exp_avg_sq(), v.data(), n * 4);
  if (ck_master) {
    // fp32 masters are the exact weights of a bf16/fp16 run; an fp32 run's parameters are its masters.
    be.copy_to_device(opt.master(), master.data(), n * 4);
    opt.master_to_params();
  } else if (opt.has_separate_master()) {
    be.convert(opt.master(), DType::F32, stage.params(), be.compute_dtype(), n);
  }
}

void LocalRunner::save(const std::string& save_dir, checkpoint::Step step, const checkpoint::Metadata& meta,
                       bool save_optim) {
  StageTensorsHost host;
  gather_stage_tensors(stage_, save_optim ? &opt_ : nullptr, host);
  checkpoint::save(save_dir, step, meta, host.model, host.optim);
}

void LocalRunner::load(const checkpoint::Checkpoint& ck, bool load_optim) {
  checkpoint::load_stage_parameters(stage_, ck);
  if (load_optim) {
    load_optimizer_state(stage_, opt_, ck);
  } else if (opt_.has_separate_master()) {
    stage_.backend().convert(opt_.master(), DType::F32, stage_.params(), stage_.backend().compute_dtype(),
                             stage_.layout().total);
  }
}

}  // namespace gptrain
