#include "core/train/pretrain.h"

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/model/gpt_stage.h"
#include "core/optim/adamw.h"
#include "core/train/local_runner.h"
#include "core/train/memory_plan.h"
#include "core/train/mock_dataset.h"
#include "core/train/trainer.h"
#include "data/loader/gpt_data.h"
#include "data/tokenizer/gpt2_tokenizer.h"
#include "kernels/backend.h"

namespace gptrain {

std::unique_ptr<Backend> make_training_backend(const std::string& device, DType dtype,
                                               const BackendOptions& options) {
  if (device == "cpu" || device == "cuda") return make_backend(device, dtype, options);
#ifdef GPTRAIN_HAVE_CUDA
  try {
    return make_backend("cuda", dtype, options);
  } catch (const Error& e) {
    log::warn("--device auto: no usable CUDA device ({}); using the cpu backend", e.what());
  }
#endif
  return make_backend("cpu", dtype, options);
}

std::unique_ptr<Backend> make_training_backend(const TrainArgs& args) {
  const AttentionBackend attention = parse_attention_backend(args.attention_backend);
  // make_backend("cpu") refuses any --attention-backend but auto (one attention implementation).
  auto be = make_training_backend(args.device, args.params_dtype,
                                  BackendOptions{attention, args.deterministic_mode, /*device=*/0});
  if (std::string(be->name()) == "cuda")
    log::info("pretrain_gpt: cuda attention {}, deterministic mode {}", attention_backend_name(attention),
              args.deterministic_mode ? "on" : "off");
  return be;
}

VocabInfo vocab_info(const TrainArgs& a) {
  check(a.tokenizer_type == "GPT2BPETokenizer",
        "--tokenizer-type {}: gptrain implements GPT2BPETokenizer only", a.tokenizer_type);
  check(a.vocab_file.has_value() == a.merge_file.has_value(), "--vocab-file and --merge-file go together");
  const GPT2Tokenizer tok = a.vocab_file ? GPT2Tokenizer(*a.vocab_file, *a.merge_file) : GPT2Tokenizer::load_default();
  VocabInfo v{tok.vocab_size(), tok.eod_id()};
  if (a.vocab_size) {
    check(a.mock_data, "--vocab-size {} with GPT2BPETokenizer: the tokenizer fixes the vocabulary ({}); "
          "--vocab-size is only for --mock-data", *a.vocab_size, v.vocab_size);
    check(*a.vocab_size >= 2, "--vocab-size must be >= 2");
    v.vocab_size = *a.vocab_size;
    v.eod_token = v.vocab_size - 1;
  }
  return v;
}

namespace {

DataArgs data_args(const TrainArgs& a, int32_t eod) {
  DataArgs d;
  d.data_path = a.data_path;
  d.train_data_path = a.train_data_path;
  d.valid_data_path = a.valid_data_path;
  d.test_data_path = a.test_data_path;
  d.split = a.split;
  d.seq_length = *a.seq_length;
  d.seed = uint32_t(a.seed);
  d.data_cache_path = a.data_cache_path.value_or("");
  d.eod_mask_loss = a.eod_mask_loss;
  d.reset_position_ids = a.reset_position_ids;
  d.reset_attention_mask = a.reset_attention_mask;
  d.eod_token = eod;
  d.num_workers = a.num_workers;
  d.mid_level_dataset_surplus = a.mid_level_dataset_surplus;
  return d;
}

}  // namespace

GPTDatasets training_datasets(const TrainArgs& a, const VocabInfo& v, const BuildSync& sync) {
  TrainingLength len;
  len.train_iters = a.train_iters;
  len.train_samples = a.train_samples;
  if (a.eval_interval) len.eval_interval = *a.eval_interval;
  len.eval_iters = a.eval_iters;
  len.global_batch_size = *a.global_batch_size;
  const SplitSampleCounts counts = megatron_sample_counts(len);
  if (!a.mock_data) return build_gpt_datasets(data_args(a, v.eod_token), counts, sync);
  auto mock = [&](int split, uint64_t salt) -> std::shared_ptr<const SampleDataset> {
    const int64_t n = counts[split].value_or(int64_t(a.eval_iters) * *a.global_batch_size);
    if (n <= 0) return nullptr;
    return std::make_shared<MockSampleDataset>(n, *a.seq_length, v.vocab_size, v.eod_token, uint64_t(a.seed) * 3 + salt);
  };
  return {mock(0, 0), mock(1, 1), mock(2, 2)};
}

int pretrain_gpt_main(const TrainArgs& args) {
  check(!args.dry_run, "pretrain_gpt_main: --dry-run is handled by parallel/plan/dry_run.h");
  check(args.tensor_model_parallel_size == 1 && args.pipeline_model_parallel_size == 1 && !args.use_distributed_optimizer,
        "this pretrain_gpt runs one process: TP/PP/distributed optimizer need the MPI launcher");
  auto be = make_training_backend(args);
  const VocabInfo vocab = vocab_info(args);
  const ModelConfig cfg = model_config_from_args(args, vocab.vocab_size);
  GPTDatasets data = training_datasets(args, vocab);
  GptStage stage(cfg, *be);
  stage.init_parameters();
  AdamW opt(*be, stage.params(), stage.grads(), stage.layout().total, stage.layout().num_decay,
            AdamWHyper{float(args.adam_beta1), float(args.adam_beta2), float(args.adam_eps)});
  log::info("pretrain_gpt: {} backend ({}), {} parameters ({} with weight decay), family {}, padded vocab {}",
            be->name(), dtype_name(be->compute_dtype()), stage.layout().total, stage.layout().num_decay,
            model_family(cfg), cfg.padded_vocab_size);
  const MemoryPlan plan = memory_plan(stage, opt, 1);
  log::info("pretrain_gpt: {}", format_memory_plan(plan));
  check_memory_plan_fits(plan, *be);
  LocalRunner runner(stage, opt);
  Trainer trainer(args, cfg, runner, std::move(data), vocab.eod_token);
  return trainer.run();
}

}  // namespace gptrain
