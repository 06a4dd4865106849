#include "core/train/trainer.h"

#include "core/train/setup.h"

#include "core/checkpoint/checkpoint_tokenizer.h"
#include "core/checkpoint/model_json.h"
#include "core/checkpoint/retention.h"
#include "core/common/agreed_error.h"
#include "core/common/clock.h"
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/common/log_level.h"
#include "core/common/splitmix64.h"
#include "core/hf/family.h"
#include "core/metrics/flops.h"
#include "core/metrics/jsonl_writer.h"
#include "core/metrics/log_interval.h"
#include "core/metrics/log_line.h"
#include "core/metrics/megatron_timers.h"
#include "core/metrics/profiler.h"
#include "core/metrics/progress_log.h"
#include "core/metrics/tensorboard_scalars.h"
#include "core/metrics/tensorboard_writer.h"
#include "core/optim/grad_clip.h"
#include "core/optim/loss_scaler.h"
#include "core/schedule/batch_schedule.h"
#include "core/schedule/lr_schedule.h"
#include "core/train/exit_signal.h"
#include "core/train/moe_log.h"
#include "core/train/resume_data_check.h"
#include "core/train/result_checks.h"
#include "core/train/train_checkpoints.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>

namespace gptrain {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

struct Trainer::Impl {
  const TrainArgs& args;
  ModelConfig model;
  // The Hugging Face family the saved checkpoints record: the switches' (core/hf/family.h), or the loaded
  // checkpoint's.
  std::string family;
  ModelRunner& runner;
  GPTDatasets data;
  TrainerPlacement place;
  schedule::LrScheduler sched;
  schedule::GlobalBatchSchedule batches;
  LossScaler scaler;
  ResultChecks result_checks;
  TrainProgress prog;
  std::unique_ptr<GPTBatchLoader> train_loader, valid_loader, test_loader;
  std::vector<std::unique_ptr<GPTBatchLoader>> valid_set_loaders;  // --multiple-validation-sets, when several
  std::unique_ptr<metrics::JsonlWriter> jsonl;
  std::unique_ptr<metrics::TensorBoardWriter> tb;
  std::unique_ptr<metrics::Profiler> profiler;      // --profile on this rank
  std::unique_ptr<metrics::MegatronTimers> timers;  // --timing-log-level 1 or 2 (installed as the timer sink)
  int64_t train_iters = 0;
  int64_t eval_gbs = 0;  // --eval-global-batch-size, or the global batch size (rounded down to whole rounds)
  TrainCheckpoints checkpoints;
  BatchShape shape;
  BatchOptions batch_opts;
  LossNormalization loss_normalization = LossNormalization::per_micro_batch;
  std::vector<HostMicroBatch> mbs;
  MicroBatch scratch;
  std::optional<exit_signal::TestRaise> test_raise = exit_signal::TestRaise::from_env();
  // --log-progress's job throughput: from here, and the FLOPs the run had trained when it started.
  std::chrono::system_clock::time_point job_start = std::chrono::system_clock::now();
  double job_start_flops = 0.0;

  Impl(const TrainArgs& a, const ModelConfig& m, ModelRunner& r, GPTDatasets d, int32_t eod, TrainerPlacement p)
      : args(a),
        model(m),
        family(hf::default_family(m)),
        runner(r),
        data(std::move(d)),
        place(p),
        sched(a.schedule, a.training),
        batches(schedule::GlobalBatchSchedule::from_args(a.training, p.dp_size, m.seq_length)),
        scaler(LossScaler::from_flags(a.precision)),
        result_checks({!a.training.no_check_for_nan_in_loss_and_grad, a.training.check_for_spiky_loss,
                       a.training.check_for_large_grads}),
        profiler(metrics::Profiler::from_args(a.logging, p.rank, p.on_gpu)),
        checkpoints(a.checkpoint, r, p) {
    const TrainingArgs& t = a.training;
    eval_gbs = t.eval_global_batch_size ? *t.eval_global_batch_size : batches.eval_batch_size();
    if (t.calculate_per_token_loss) loss_normalization = LossNormalization::per_token;
    train_iters = t.train_iters ? *t.train_iters : batches.train_iters(*t.train_samples);
    shape = {*t.micro_batch_size, int(eval_gbs), p.dp_rank, p.dp_size};
    batch_opts = batch_options(a.data, eod, m.vocab_size);
    if (data.valid) valid_loader = std::make_unique<GPTBatchLoader>(data.valid, shape, batch_opts);
    for (const auto& set : data.valid_sets)
      valid_set_loaders.push_back(std::make_unique<GPTBatchLoader>(set, shape, batch_opts));
    const size_t sets = std::max<size_t>(1, data.valid_sets.size());
    const std::vector<std::string>& names = a.data.validation_set_names;
    check(names.empty() || names.size() == sets,
          "--validation-set-names gives {} names for {} validation datasets (one per --valid-data-path prefix)",
          names.size(), sets);
    if (data.test) test_loader = std::make_unique<GPTBatchLoader>(data.test, shape, batch_opts);
    if (a.logging.timing_log_level > 0) {
      std::function<void()> sync;
      if (p.on_gpu) sync = [this] { runner.synchronize(); };
      timers = std::make_unique<metrics::MegatronTimers>(a.logging.timing_log_level, std::move(sync),
                                                         [this] { runner.any_rank(false); });
      set_active_timer_sink(timers.get());
    }
  }
  ~Impl() {
    if (timers) set_active_timer_sink(nullptr);
  }

  // The training loader for an iteration of `batch` samples (the same sample order for any batch size).
  GPTBatchLoader& train_loader_for(int64_t batch) {
    if (!train_loader || shape.global_batch_size != batch) {
      shape.global_batch_size = int(batch);
      train_loader = std::make_unique<GPTBatchLoader>(data.train, shape, batch_opts);
    }
    return *train_loader;
  }

  // The micro-batch in `scratch` as mbs[k] (without a dropout seed).
  HostMicroBatch& store_scratch(int k) {
    HostMicroBatch& h = mbs[k];
    h.tokens = scratch.tokens;
    h.labels = scratch.labels;
    h.loss_mask = scratch.loss_mask;
    h.position_ids = scratch.position_ids;
    if (args.data.reset_attention_mask)
      h.segment_ids = scratch.segment_ids;
    else
      h.segment_ids.clear();
    h.dropout_seed = 0;
    return h;
  }

  // Micro-batches of the global batch at `consumed` from `loader`; training ones get dropout seeds.
  void fetch(GPTBatchLoader& loader, int64_t consumed, bool train) {
    const int n = loader.num_micro_batches();
    mbs.resize(n);
    for (int k = 0; k < n; ++k) {
      loader.fill(scratch, consumed, k);
      HostMicroBatch& h = store_scratch(k);
      if (train) {
        // The micro-batch's number among all the run's micro-batches, every DP rank's: this rank's k-th holds
        // the global batch's micro-batch k * dp + dp_rank (the loader's order), so every DP size draws the
        // single process's masks.
        const uint64_t stream =
            prog.dropout_micro_batches + uint64_t(k) * uint64_t(place.dp_size) + uint64_t(place.dp_rank);
        h.dropout_seed = splitmix64(splitmix64(uint64_t(args.training.seed)) ^ splitmix64(stream));
      }
    }
    if (train) prog.dropout_micro_batches += uint64_t(n) * uint64_t(place.dp_size);
  }

  checkpoint::Metadata metadata() const {
    checkpoint::Metadata m;
    m.iteration = prog.iteration;
    m.consumed_train_samples = prog.consumed_train_samples;
    m.consumed_valid_samples = prog.consumed_valid_samples;
    m.skipped_train_samples = prog.skipped_train_samples;
    m.model = checkpoint::model_to_json({family, args.tokenizer.tokenizer_type, model});
    m.layout = {args.parallel.tensor_model_parallel_size, args.parallel.pipeline_model_parallel_size, place.dp_size,
                args.parallel.use_distributed_optimizer};
    m.args = train_args_to_json(args);
    m.scheduler = sched.state_json();
    m.scheduler["adam_steps"] = runner.optimizer_steps();
    // --no-save-rng: the dropout stream is not saved, so a resumed run starts it afresh (as --no-load-rng).
    if (!args.checkpoint.no_save_rng)
      m.rng = {{"seed", args.training.seed}, {"dropout_micro_batches", prog.dropout_micro_batches}};
    m.loss_scale = scaler.state_json();
    m.num_floating_point_operations_so_far = prog.flops_so_far;
    return m;
  }

  void save(TrainCheckpoints::Kind kind = TrainCheckpoints::Kind::persistent) {
    checkpoints.save(kind, metadata(), [&] {
      if (test_raise) test_raise->maybe_raise(prog.iteration, true, place.rank);
    });
    if (kind == TrainCheckpoints::Kind::persistent) log_progress_of_save();
  }

  // --log-progress after a persistent save (Megatron's compute_throughputs_and_append_to_progress_log): the
  // job's and the cumulative TFLOP/s/GPU (since the first job of this world size the file records).
  void log_progress_of_save() {
    if (!args.logging.log_progress || !args.checkpoint.save || place.rank != 0) return;
    const std::string& dir = *args.checkpoint.save;
    const auto now = std::chrono::system_clock::now();
    auto tflops = [&](double flops, std::chrono::system_clock::time_point since) {
      const double secs = std::chrono::duration<double>(now - since).count();
      return secs > 0 ? flops / (secs * 1e12 * place.world_size) : 0.0;
    };
    const metrics::ProgressStart start = metrics::progress_start(dir, place.world_size);
    metrics::append_progress(
        dir, place.world_size,
        metrics::saved_checkpoint_event(args.checkpoint.async_save, prog.iteration,
                                        tflops(prog.flops_so_far - job_start_flops, job_start),
                                        tflops(prog.flops_so_far - start.flops, start.time), prog.flops_so_far,
                                        double(prog.consumed_train_samples) * double(model.seq_length)));
  }

  // At an exit: the iteration is saved (persistently) unless it just was, and nothing is left pending.
  void save_before_exit() {
    if (args.checkpoint.save && checkpoints.last_persistent() != prog.iteration) save();
    checkpoints.finish();
  }

  // The micro-batches the saved run had trained, over all its DP ranks. Older checkpoints counted one DP
  // rank's ("dropout_counter", equal on every rank).
  static uint64_t dropout_micro_batches(const checkpoint::Metadata& meta) {
    if (meta.rng.contains("dropout_micro_batches")) return meta.rng.at("dropout_micro_batches").get<uint64_t>();
    if (!meta.rng.contains("dropout_counter")) return 0;
    return meta.rng.at("dropout_counter").get<uint64_t>() * uint64_t(std::max(1, meta.layout.dp));
  }

  // --moe-use-upcycling, as Megatron: the first run from a dense checkpoint only (a later one resumes the MoE
  // checkpoint without the flag); iteration, FLOPs, optimizer and RNG start fresh. So do the data cursors, as
  // with --finetune: Megatron keeps the dense run's consumed samples while counting iterations from 0, which
  // in datasets sized to --train-iters runs out of samples.
  static void check_upcycling_destination(const std::string& save) {
    const bool has = std::filesystem::is_directory(save) &&
                     (checkpoint::read_tracker(save) || !checkpoint::saved_iterations(save).empty());
    check(!has,
          "--moe-use-upcycling: --save {} already holds a checkpoint; upcycling is for the first run from the dense "
          "checkpoint: drop --moe-use-upcycling to resume the MoE run, or give --save an empty directory",
          save);
  }

  void upcycle(const checkpoint::Checkpoint& ck) {
    const checkpoint::Metadata& meta = ck.metadata();
    runner.upcycle(ck);
    if (place.logs)
      log::info(
          "upcycled the dense checkpoint {} (iteration {}) into {} experts per MoE layer; training starts at "
          "iteration 0",
          ck.dir(), meta.iteration, args.whole_model.moe.num_experts);
  }

  void load() {
    const CheckpointArgs& ck_args = args.checkpoint;
    if (args.moe.moe_use_upcycling) check_upcycling_destination(*ck_args.save);
    const std::optional<checkpoint::Checkpoint> opened = checkpoints.open_for_load();
    check(opened || !args.moe.moe_use_upcycling, "--moe-use-upcycling: --load {} holds no checkpoint to upcycle",
          ck_args.load.value_or(""));
    if (!opened) return;
    const checkpoint::Checkpoint& ck = *opened;
    const checkpoint::Metadata& meta = ck.metadata();
    check_checkpoint_vocabulary(ck, args.tokenizer, model.vocab_size, model.padded_vocab_size);
    if (args.moe.moe_use_upcycling) return upcycle(ck);
    const bool load_optim = !ck_args.finetune && !ck_args.no_load_optim;
    runner.load(ck, load_optim);
    if (meta.model.is_object() && meta.model.contains("family") && meta.model.at("family").is_string())
      family = meta.model.at("family").get<std::string>();
    if (!ck_args.finetune) {
      if (place.logs)
        for (const std::string& line : changed_data_args(meta.args, args.data, meta.consumed_train_samples))
          log::warn("{}", line);
      prog.iteration = meta.iteration;
      prog.consumed_train_samples = meta.consumed_train_samples;
      prog.consumed_valid_samples = meta.consumed_valid_samples;
      prog.flops_so_far = meta.num_floating_point_operations_so_far;
      prog.skipped_train_samples = meta.skipped_train_samples;
      checkpoints.set_last_persistent(meta.iteration);
    }
    if (load_optim) {
      nlohmann::json s = meta.scheduler;
      if (s.contains("adam_steps")) {
        runner.set_optimizer_steps(s.at("adam_steps").get<int64_t>());
        s.erase("adam_steps");
      }
      sched.load_state_json(s);
      scaler.load_state_json(meta.loss_scale);
    }
    if (!ck_args.finetune && !ck_args.no_load_rng) prog.dropout_micro_batches = dropout_micro_batches(meta);
    if (place.logs)
      log::info("loaded checkpoint {} at iteration {}{}", ck.dir(), meta.iteration,
                ck_args.finetune ? " (--finetune: weights only, iteration 0)" : "");
  }

  LossTotals evaluate(GPTBatchLoader& loader, int64_t& consumed) {
    ProfileRange range("evaluate");
    LossTotals t;
    for (int i = 0; i < args.training.eval_iters; ++i) {
      fetch(loader, consumed, false);
      const LossTotals b = runner.eval_batch(mbs);
      t.loss_sum += b.loss_sum;
      t.num_tokens += b.num_tokens;
      consumed += eval_gbs;
    }
    return t;
  }

  metrics::TensorBoardOptions tb_options() const {
    metrics::TensorBoardOptions o;
    o.log_validation_ppl = args.logging.log_validation_ppl_to_tensorboard;
    o.log_world_size = args.logging.log_world_size_to_tensorboard;
    o.log_loss_scale = !args.logging.no_log_loss_scale_to_tensorboard;
    o.world_size = place.world_size;
    return o;
  }

  // Logs and records an evaluation's loss (TensorBoard has no final test scalars, as Megatron).
  // set_name: one of --multiple-validation-sets (logged as "validation-NAME loss at ...").
  void report_eval(metrics::EvalKind kind, const LossTotals& t, const std::string& set_name = "") {
    if (!place.logs) return;
    const std::vector<std::pair<std::string, double>> losses{{"lm loss", t.mean()}};
    const std::string suffix = set_name.empty() ? "" : "-" + set_name;
    log::training_log(metrics::format_validation_block(metrics::eval_prefix(prog.iteration, kind), losses, suffix));
    if (jsonl) jsonl->write(metrics::eval_record(prog.iteration, prog.consumed_train_samples, kind, losses, set_name));
    if (tb && kind != metrics::EvalKind::final_test) {
      metrics::write_validation_scalars(*tb, prog.iteration, prog.consumed_train_samples, losses, tb_options(), suffix);
      tb->flush();
    }
  }

  // --full-validation (Megatron's): every sample of the validation split once, in rounds of
  // micro-batch x DP rows (rank r takes the r-th block; the last round's missing rows are padding without
  // loss tokens), as many micro-batches per call as an evaluation batch has. The consumed validation samples
  // advance as Megatron's: one evaluation batch per sample of a DP rank's share.
  LossTotals evaluate_full(GPTBatchLoader& loader) {
    ProfileRange range("evaluate");
    const int64_t n = loader.dataset().size(), B = shape.micro_batch_size, dp = place.dp_size;
    const int64_t rounds = (n + B * dp - 1) / (B * dp);
    const int64_t per_call = loader.num_micro_batches();
    LossTotals t;
    for (int64_t r0 = 0; r0 < rounds; r0 += per_call) {
      const int m = int(std::min(per_call, rounds - r0));
      mbs.resize(m);
      for (int k = 0; k < m; ++k) {
        loader.fill_range(scratch, (r0 + k) * B * dp + place.dp_rank * B, n);
        store_scratch(k);
      }
      const LossTotals b = runner.eval_batch(mbs);
      t.loss_sum += b.loss_sum;
      t.num_tokens += b.num_tokens;
    }
    prog.consumed_valid_samples += (n + dp - 1) / dp * eval_gbs;
    if (place.logs) log::info("full validation: {} samples of the validation split", n);
    return t;
  }

  // Megatron's do_valid: --eval-iters batches, or the whole split with --full-validation.
  bool validates() const { return valid_loader && (args.training.full_validation || args.training.eval_iters > 0); }

  // --eval-iters batches of the valid split, continuing where the last evaluation left off (the whole split
  // with --full-validation).
  void validate(metrics::EvalKind kind) {
    if (args.data.multiple_validation_sets) {
      // As Megatron: every set whole (--full-validation), named by --validation-set-names or its index.
      const size_t sets = std::max<size_t>(1, valid_set_loaders.size());
      for (size_t i = 0; i < sets; ++i) {
        GPTBatchLoader& loader = valid_set_loaders.empty() ? *valid_loader : *valid_set_loaders[i];
        const auto& names = args.data.validation_set_names;
        report_eval(kind, evaluate_full(loader), names.empty() ? std::to_string(i) : names[i]);
      }
      return;
    }
    if (args.training.full_validation)
      report_eval(kind, evaluate_full(*valid_loader));
    else
      report_eval(kind, evaluate(*valid_loader, prog.consumed_valid_samples));
  }

  // ---- the training loop ----

  // Why a run stops before its last iteration.
  enum class Stop { none, exit_signal, exit_interval, exit_duration };

  // What the loop carries from one iteration to the next, besides the progress.
  struct LoopState {
    int64_t batch = 0;      // the global batch size last seen (a change is logged as a ramp-up)
    int micro_batches = 0;  // micro-batches per iteration last seen (a change saves a checkpoint)
    metrics::LogInterval interval;
    bool first_line = true;  // the next line is the run's first (logged whatever --log-interval says)
    Clock::time_point train_start, interval_start;
    double paused = 0.0;  // eval / save time inside the interval, not counted as iteration time
  };
  LoopState loop;

  // What a training iteration yields for its log line and scalars.
  struct IterationResult {
    LossTotals totals;
    std::vector<std::pair<std::string, float>> losses;  // "lm loss", then the MoE auxiliary losses
    double grad_norm = 0.0;
    std::optional<int64_t> num_zeros;   // --log-num-zeros-in-grad, steps not skipped
    std::optional<double> params_norm;  // --log-params-norm, after the step
    bool skipped = false;               // the optimizer step was skipped (fp16 overflow)
    int64_t batch = 0;                  // the samples it consumed
  };

  // The schedule's values for one optimizer step, read before the step's forward.
  struct StepHyperparameters {
    double lr, decoupled_lr, weight_decay;
  };

  int run() {
    if (args.training.skip_train) return evaluate_only();
    if (!start_run()) return 0;
    Stop stop = Stop::none;
    while (stop == Stop::none && prog.iteration < train_iters) {
      if (skip_iteration()) continue;
      const IterationResult it = train_iteration();
      log_iteration(it);
      stop = after_iteration();
    }
    if (stop == Stop::none)
      finish_training();
    else
      stop_early(stop);
    return 0;
  }

  // --load, metrics writers, the run's first log lines; the loop's clocks start last. False: the exit
  // signal came during start-up (every rank agrees), the run ends before its first iteration.
  bool start_run() {
    checkpoints.set_log_progress(args.logging.log_progress);
    if (args.logging.log_progress && args.checkpoint.save && place.rank == 0)
      metrics::append_progress(*args.checkpoint.save, place.world_size, "Starting job");
    exit_signal::startup_point("load", place.rank);
    load();
    job_start_flops = prog.flops_so_far;
    if (args.training.exit_signal_handler && runner.any_rank(exit_signal::received())) {
      if (place.logs) log::info("{}", exit_signal::startup_exit_message(args.training.exit_signal));
      checkpoints.finish();
      return false;
    }
    if (place.logs && args.logging.metrics_file)
      jsonl = std::make_unique<metrics::JsonlWriter>(*args.logging.metrics_file, prog.iteration > 0);
    if (place.logs && args.logging.tensorboard_dir)
      tb = std::make_unique<metrics::TensorBoardWriter>(*args.logging.tensorboard_dir);
    // Megatron's calculator is set from the consumed samples before the loop: a resumed run does not see
    // its first batch as a change.
    loop.batch = batches.batch_size(prog.consumed_train_samples);
    loop.micro_batches = batches.num_micro_batches(prog.consumed_train_samples);
    if (place.logs) {
      log::info(
          "training {} iterations from iteration {} ({} micro-batches of {} per iteration per DP rank); "
          "TFLOP/s count {:.4g} model FLOPs per iteration ({})",
          train_iters, prog.iteration, loop.micro_batches, *args.training.micro_batch_size,
          metrics::flops_per_iteration(model, batches.running_batch_size(prog.consumed_train_samples)),
          metrics::attention_flops_name(metrics::AttentionFlops::causal));
      if (batches.varies()) log::info("global batch: {}; current batch size {}", batches.describe(), loop.batch);
    }
    check_weight_hashes();
    loop.train_start = Clock::now();
    loop.interval_start = Clock::now();
    return true;
  }

  // --skip-train (Megatron's): no training and no save. The (loaded) model's validation loss over
  // --eval-iters batches from the validation split's start (not the checkpoint's consumed validation
  // samples), then the test loss; no TensorBoard scalars.
  int evaluate_only() {
    load();
    if (place.logs && args.logging.metrics_file)
      jsonl = std::make_unique<metrics::JsonlWriter>(*args.logging.metrics_file, prog.iteration > 0);
    if (place.logs) log::info("skipping training (--skip-train is on) ...");
    if (validates() && args.training.full_validation) {
      validate(metrics::EvalKind::final_validation);
    } else if (validates()) {
      int64_t consumed_valid = 0;
      report_eval(metrics::EvalKind::final_validation, evaluate(*valid_loader, consumed_valid));
    }
    if (test_loader && args.training.eval_iters > 0) {
      int64_t consumed_test = 0;
      report_eval(metrics::EvalKind::final_test, evaluate(*test_loader, consumed_test));
    }
    checkpoints.finish();
    return 0;
  }

  // --iterations-to-skip (Megatron's): the next iteration's global batch is consumed, counted as skipped
  // samples, and not trained on: no optimizer or LR step, no dropout draws, no log line, evaluation or save
  // at that iteration. False: the next iteration trains.
  bool skip_iteration() {
    const std::vector<int>& skip = args.training.iterations_to_skip;
    if (std::find(skip.begin(), skip.end(), prog.iteration + 1) == skip.end()) return false;
    const int64_t consumed = prog.consumed_train_samples;
    follow_batch_schedule(consumed);
    const int64_t batch = batches.running_batch_size(consumed);
    ++prog.iteration;
    prog.consumed_train_samples += batch;
    prog.skipped_train_samples += batch;
    if (place.logs)
      log::info("iteration {} skipped (--iterations-to-skip): its {} samples consumed without training", prog.iteration,
                batch);
    return true;
  }

  // One optimizer step on the global batch at consumed_train_samples.
  IterationResult train_iteration() {
    if (profiler) profiler->iteration_starting(prog.iteration);
    ProfileRange step_range("train-step");
    // This iteration's batch follows the samples consumed before it (Megatron's update_num_microbatches).
    const int64_t consumed = prog.consumed_train_samples;
    IterationResult it;
    it.batch = batches.running_batch_size(consumed);
    follow_batch_schedule(consumed);
    const StepHyperparameters hp{sched.lr(), sched.decoupled_lr(), sched.weight_decay()};
    ProfileRange fetch_range("data-fetch");
    fetch(train_loader_for(it.batch), consumed, true);
    fetch_range.end();
    const double scale = scaler.scale();
    it.totals = runner.train_batch(mbs, scale, loss_normalization);
    if (test_raise) test_raise->maybe_raise(prog.iteration + 1, false, place.rank);
    const float loss = float(it.totals.mean());
    step_optimizer(it, hp, scale, loss);
    step_range.end();
    // As Megatron: after every step (skipped ones too), whatever the log interval.
    if (args.logging.log_params_norm) it.params_norm = std::sqrt(runner.params_sum_squares());
    ++prog.iteration;
    prog.consumed_train_samples += it.batch;
    prog.flops_so_far += metrics::flops_per_iteration(model, it.batch);
    it.losses = {{"lm loss", loss}};
    for (auto& l : moe_log_losses(model.moe, it.totals.moe)) it.losses.push_back(std::move(l));
    loop.interval.add_iteration(it.losses, it.skipped);
    return it;
  }

  // A new batch size is logged; a new number of micro-batches saves a checkpoint (as Megatron), its time
  // paused out of the interval's.
  void follow_batch_schedule(int64_t consumed) {
    if (batches.batch_size(consumed) != loop.batch) {
      if (place.logs) log::info("ramping up batch size from {} to {}", loop.batch, batches.batch_size(consumed));
      loop.batch = batches.batch_size(consumed);
    }
    if (batches.num_micro_batches(consumed) != loop.micro_batches) {
      loop.micro_batches = batches.num_micro_batches(consumed);
      const auto save_start = Clock::now();
      if (args.checkpoint.save && prog.iteration != 0 && checkpoints.last_persistent() != prog.iteration) save();
      loop.paused += seconds_since(save_start);
    }
  }

  // The gradient norm and the result checks, then (unless an fp16 overflow skips it) the clipped optimizer
  // step and the schedule's. Sets it.grad_norm and it.skipped.
  void step_optimizer(IterationResult& it, const StepHyperparameters& hp, double scale, float loss) {
    TimerRange timer("optimizer");
    ProfileRange norm_range("grad-norm");
    const double sumsq = runner.grad_sum_squares();
    norm_range.end();
    const bool found_inf = !std::isfinite(sumsq);
    it.grad_norm = std::sqrt(sumsq) / scale;
    scaler.update(found_inf);
    it.skipped = found_inf && scaler.kind() != LossScaler::Kind::None;
    result_checks.check_loss(prog.iteration + 1, loss, scaler.kind() == LossScaler::Kind::Dynamic);
    result_checks.check_grad_norm(prog.iteration + 1, it.grad_norm, it.skipped);
    if (it.skipped) return;
    if (args.logging.log_num_zeros_in_grad) {
      TimerRange zeros_timer("optimizer-count-zeros");
      it.num_zeros = runner.grad_zeros();
    }
    const double coef = clip_coefficient(it.grad_norm, args.optimizer.clip_grad);
    ProfileRange opt_range("optimizer-step");
    runner.optimizer_step(float(hp.lr), float(hp.decoupled_lr), float(hp.weight_decay), float(coef / scale));
    sched.step(it.batch);  // the schedule counts samples
  }

  // The iteration's TensorBoard scalars; its line every --log-interval and after a run's first iteration.
  void log_iteration(const IterationResult& it) {
    metrics::IterationLogValues v;
    v.timestamp = std::chrono::system_clock::now();
    v.iteration = prog.iteration;
    v.train_iters = train_iters;
    v.consumed_samples = prog.consumed_train_samples;
    v.skipped_samples = prog.skipped_train_samples;
    v.learning_rate = sched.lr();
    if (sched.has_decoupled_lr()) v.decoupled_learning_rate = sched.decoupled_lr();
    v.global_batch_size = it.batch;
    v.loss_scale = scaler.scale();
    if (!it.skipped) v.grad_norm = it.grad_norm;
    v.num_zeros_in_grad = it.num_zeros;
    v.params_norm = it.params_norm;
    if (tb) write_iteration_scalars(v, it);
    if (prog.iteration % args.logging.log_interval == 0 || loop.first_line) log_interval_line(v, it);
  }

  void write_iteration_scalars(const metrics::IterationLogValues& v, const IterationResult& it) {
    metrics::IterationLogValues cur = v;
    cur.losses.clear();
    for (const auto& [name, value] : it.losses) cur.losses.emplace_back(name, double(value));
    metrics::write_train_scalars(*tb, cur, tb_options());
    if (args.logging.log_memory_to_tensorboard) metrics::write_memory_scalars(*tb, prog.iteration, memory_scalars());
    if (args.moe.moe_per_layer_logging)
      for (const auto& [tag, value] : moe_layer_scalars(model.moe, it.totals.moe))
        tb->add_scalar(tag, prog.iteration, value);
  }

  metrics::MemoryScalars memory_scalars() {
    const AllocatedBytes a = runner.allocated_bytes();
    metrics::MemoryScalars m{a.current, a.current, a.peak, a.count};
    if (const std::optional<DeviceMemory> d = runner.device_memory()) m.reserved = d->total - d->free;
    return m;
  }

  // Megatron's iteration line over the interval (its time less the paused eval / save time), then a new
  // interval.
  void log_interval_line(metrics::IterationLogValues& v, const IterationResult& it) {
    const double secs = (seconds_since(loop.interval_start) - loop.paused) / double(loop.interval.total_iterations());
    v.elapsed_ms_per_iteration = secs * 1e3;
    // As Megatron: the averaged iteration time against this iteration's batch.
    if (args.logging.log_throughput)
      v.throughput_tflops_per_gpu =
          metrics::tflops_per_gpu(metrics::flops_per_iteration(model, it.batch), secs, place.world_size);
    v.tokens_per_second = double(it.batch) * double(model.seq_length) / secs;
    loop.interval.fill(v);
    if (place.logs) {
      log::training_log(metrics::format_iteration_line(v));
      if (args.moe.moe_per_layer_logging && model.moe.enabled())
        log::info("{}", format_moe_layer_line(model.moe, it.totals.moe, prog.iteration));
      if (jsonl) jsonl->write(metrics::train_record(v));
      // As Megatron: not after a run's first iteration (its time includes the start-up).
      if (tb && args.logging.log_timers_to_tensorboard && !loop.first_line)
        metrics::write_timer_scalars(*tb, prog.iteration, secs, v.throughput_tflops_per_gpu);
    }
    // The extra line after a run's first iteration keeps accumulating (Megatron); regular lines reset.
    const bool reset = !loop.first_line || prog.iteration % args.logging.log_interval == 0;
    if (timers) log_timers(reset);
    if (place.logs && tb) tb->flush();
    if (reset) loop.interval.reset();
    loop.first_line = false;
    loop.interval_start = Clock::now();
    loop.paused = 0.0;
  }

  // Megatron's timers after the line: each timer's minimum (over the ranks where it measured anything) and
  // maximum over every rank, per iteration (the sums over --log-interval iterations, as Megatron divides),
  // printed by the logging rank and, with --log-timers-to-tensorboard, the maximum as "<name>-time" (s).
  // Every rank takes part (a collective).
  void log_timers(bool reset) {
    const std::vector<std::pair<std::string, double>> el = timers->elapsed();
    const std::size_t n = el.size();
    std::vector<double> ext(2 * n);  // max of -t (t > 0), then max of t
    for (std::size_t i = 0; i < n; ++i) {
      ext[i] = el[i].second > 0 ? -el[i].second : -std::numeric_limits<double>::infinity();
      ext[n + i] = el[i].second;
    }
    runner.max_across_ranks(ext);
    if (reset) timers->reset();
    if (!place.logs) return;
    std::vector<std::string> names(n);
    std::vector<std::optional<double>> lo(n), hi(n);
    const double iterations = double(args.logging.log_interval);
    for (std::size_t i = 0; i < n; ++i) {
      names[i] = el[i].first;
      if (ext[n + i] <= 0) continue;
      lo[i] = -ext[i];
      hi[i] = ext[n + i];
      if (tb && args.logging.log_timers_to_tensorboard)
        tb->add_scalar(names[i] + "-time", prog.iteration, *hi[i] / iterations);
    }
    const std::string block = metrics::format_timer_block(names, lo, hi, iterations);
    if (!block.empty()) log::info("{}", block);
  }

  // After an iteration, in Megatron's order: evaluation, the exit signal, the regular save, the exit
  // interval and duration. Returns why the run stops here (Stop::none: it goes on). Every rank makes the
  // same collectives in the same order, so all of them stop at the same iteration.
  Stop after_iteration() {
    const auto pause_start = Clock::now();
    const auto& hash_interval = args.training.check_weight_hash_across_dp_replicas_interval;
    if (hash_interval && prog.iteration % *hash_interval == 0) check_weight_hashes();
    const std::optional<int64_t>& eval_from = args.training.start_eval_at_iter;
    if (args.training.eval_interval && prog.iteration % *args.training.eval_interval == 0 &&
        (!eval_from || prog.iteration >= *eval_from) && validates())
      validate(metrics::EvalKind::during_training);
    // As Megatron: the signal is looked at before the regular save, every rank through one collective.
    checkpoints.poll();
    if (args.training.exit_signal_handler && runner.any_rank(exit_signal::received())) return Stop::exit_signal;
    const CheckpointArgs& ck = args.checkpoint;
    if (ck.save && prog.iteration % *ck.save_interval == 0)
      save();
    else if (ck.save && ck.non_persistent_save_interval && prog.iteration % *ck.non_persistent_save_interval == 0)
      save(TrainCheckpoints::Kind::non_persistent);
    loop.paused += seconds_since(pause_start);
    if (profiler) profiler->iteration_done(prog.iteration);
    return exit_due();
  }

  // --check-weight-hash-across-dp-replicas-interval: at the start and after every N iterations (Megatron's
  // post-step callbacks, before evaluation); a mismatch stops every rank with the same error.
  void check_weight_hashes() {
    if (!args.training.check_weight_hash_across_dp_replicas_interval) return;
    const std::optional<std::string> mismatch = runner.weight_hash_mismatch(prog.iteration);
    if (mismatch)
      fail_agreed(
          "--check-weight-hash-across-dp-replicas-interval: parameter hashes not matching across DP replicas "
          "after {} iterations: {}",
          prog.iteration, *mismatch);
    if (place.logs) log::info(">>> Weight hashes match after {} iterations...", prog.iteration);
  }

  // --exit-interval / --exit-duration-in-mins. The duration's collective runs whenever the flag is set.
  Stop exit_due() {
    const TrainingArgs& training = args.training;
    const bool exit_interval = training.exit_interval && prog.iteration % *training.exit_interval == 0;
    // Each rank's clock differs: the ranks agree (Megatron all-reduces this decision too).
    const bool exit_time = training.exit_duration_in_mins &&
                           runner.any_rank(seconds_since(loop.train_start) / 60.0 > *training.exit_duration_in_mins);
    if (exit_interval) return Stop::exit_interval;
    return exit_time ? Stop::exit_duration : Stop::none;
  }

  // An exit before the last iteration: the iteration is saved, the reason logged, the profile closed.
  void stop_early(Stop why) {
    save_before_exit();
    if (place.logs) {
      if (why == Stop::exit_signal)
        log::info("exiting program at iteration {} after receiving {} (--exit-signal-handler)", prog.iteration,
                  args.training.exit_signal);
      else
        log::info("exiting program at iteration {} ({})", prog.iteration,
                  why == Stop::exit_interval ? "--exit-interval" : "--exit-duration-in-mins");
    }
    if (profiler) profiler->run_done(prog.iteration);
  }

  // After the last iteration: the final save, then the final validation and test losses.
  void finish_training() {
    if (profiler) profiler->run_done(prog.iteration);
    if (prog.iteration != 0) save_before_exit();
    if (validates()) validate(metrics::EvalKind::final_validation);
    if (test_loader && args.training.eval_iters > 0) {
      int64_t consumed_test = 0;
      report_eval(metrics::EvalKind::final_test, evaluate(*test_loader, consumed_test));
    }
  }
};

Trainer::Trainer(const TrainArgs& args, const ModelConfig& model, ModelRunner& runner, GPTDatasets datasets,
                 int32_t eod_token, TrainerPlacement placement)
    : impl_(std::make_unique<Impl>(args, model, runner, std::move(datasets), eod_token, placement)) {}

Trainer::~Trainer() = default;

int Trainer::run() { return impl_->run(); }

}  // namespace gptrain
