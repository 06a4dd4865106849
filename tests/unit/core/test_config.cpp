// pretrain_gpt flags: Megatron defaults, derived values, --config YAML (flags win), and rejection of
// unknown flags, unimplemented Megatron flags and inconsistent combinations with a reason.
#include "core/common/error.h"
#include "error_text.h"
#include "core/config/train_args.h"
#include "core/hf/family.h"
#include "core/optim/loss_scaler.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace gptrain;
using gptrain::test::contains;

namespace {

std::vector<std::string> minimal() {
  return {"pretrain_gpt",
          "--num-layers",
          "2",
          "--hidden-size",
          "64",
          "--num-attention-heads",
          "4",
          "--seq-length",
          "32",
          "--max-position-embeddings",
          "64",
          "--micro-batch-size",
          "2",
          "--train-iters",
          "10",
          "--lr",
          "1e-3",
          "--mock-data"};
}

TrainArgs parse_train(std::vector<std::string> args, int world = 1) {
  std::vector<const char*> argv;
  for (auto& s : args) argv.push_back(s.c_str());
  std::optional<TrainArgs> a = parse_train_args(int(argv.size()), argv.data(), world);
  REQUIRE(a.has_value());
  return *a;
}

std::vector<std::string> with(std::vector<std::string> a, std::vector<std::string> more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::string rejection(std::vector<std::string> args, int world = 1) {
  return test::error_text([&] { parse_train(std::move(args), world); });
}

// A small model trained for 1000 samples (or 10 iterations with by_iterations) at micro-batch size 4.
std::vector<std::string> by_samples(std::vector<std::string> more, bool by_iterations = false) {
  std::vector<std::string> a{"pretrain_gpt",
                             "--num-layers",
                             "2",
                             "--hidden-size",
                             "32",
                             "--num-attention-heads",
                             "4",
                             "--seq-length",
                             "100",
                             "--max-position-embeddings",
                             "100",
                             "--micro-batch-size",
                             "4",
                             "--lr",
                             "1e-3",
                             "--mock-data"};
  if (by_iterations)
    a.insert(a.end(), {"--train-iters", "10"});
  else
    a.insert(a.end(), {"--train-samples", "1000"});
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("gptrain_test_config_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("config: Megatron defaults and derived values") {
  const TrainArgs a = parse_train(minimal());
  REQUIRE(a.model.hidden_dropout == 0.1);
  REQUIRE(a.model.attention_dropout == 0.1);
  REQUIRE(a.schedule.weight_decay == 0.01);
  REQUIRE(a.optimizer.clip_grad == 1.0);
  REQUIRE(a.training.seed == 1234);
  REQUIRE(a.optimizer.adam_beta2 == 0.999);
  REQUIRE(a.logging.log_interval == 100);
  REQUIRE(a.training.eval_iters == 100);
  REQUIRE(a.model.make_vocab_size_divisible_by == 128);
  REQUIRE(a.precision.initial_loss_scale == 4294967296.0);
  REQUIRE(*a.training.global_batch_size == 2);
  REQUIRE(a.num_micro_batches == 1);
  REQUIRE(*a.model.kv_channels == 16);
  REQUIRE(*a.model.ffn_hidden_size == 256);
  REQUIRE(a.model.num_query_groups == 4);  // no GQA: one group per head
  const StageConfig c = stage_config_from_args(a, 50257);
  REQUIRE(c.padded_vocab_size == 50304);
  REQUIRE(c.gelu == GeluKind::Tanh);
}

TEST_CASE("config: global batch -> gradient accumulation over micro-batches and DP") {
  const TrainArgs a = parse_train(with(minimal(), {"--global-batch-size", "16"}), 2);
  REQUIRE(a.data_parallel_size == 2);
  REQUIRE(a.num_micro_batches == 4);
  REQUIRE(rejection(with(minimal(), {"--global-batch-size", "6"}), 2).find("divisible") != std::string::npos);
}

TEST_CASE("config: model switches (swiglu ffn, GQA, gelu choice, rope without max positions)") {
  const TrainArgs a = parse_train({"pretrain_gpt",
                                   "--num-layers",
                                   "2",
                                   "--hidden-size",
                                   "256",
                                   "--num-attention-heads",
                                   "8",
                                   "--seq-length",
                                   "32",
                                   "--micro-batch-size",
                                   "1",
                                   "--train-iters",
                                   "1",
                                   "--lr",
                                   "1",
                                   "--mock-data",
                                   "--swiglu",
                                   "--group-query-attention",
                                   "--num-query-groups",
                                   "2",
                                   "--position-embedding-type",
                                   "rope",
                                   "--normalization",
                                   "RMSNorm",
                                   "--disable-bias-linear",
                                   "--untie-embeddings-and-output-weights"});
  REQUIRE(*a.model.ffn_hidden_size == 640);  // int(8*256/3/64)*64
  REQUIRE(*a.model.max_position_embeddings == 32);
  const StageConfig c = stage_config_from_args(a, 1000);
  REQUIRE(c.num_query_groups == 2);
  REQUIRE(c.normalization == Normalization::RMSNorm);
  REQUIRE(!c.add_bias_linear);
  REQUIRE(c.padded_vocab_size == 1024);
  REQUIRE(stage_config_from_args(parse_train(with(minimal(), {"--no-bias-gelu-fusion"})), 10).gelu == GeluKind::Erf);
  REQUIRE(stage_config_from_args(parse_train(with(minimal(), {"--disable-bias-linear"})), 10).gelu == GeluKind::Erf);
  REQUIRE(stage_config_from_args(parse_train(with(minimal(), {"--gelu", "erf"})), 10).gelu == GeluKind::Erf);
  const StageConfig gptj = stage_config_from_args(parse_train(with(minimal(), {"--disable-bias-attention"})), 10);
  REQUIRE((gptj.disable_bias_attention && !gptj.qkv_bias() && !gptj.proj_bias() && gptj.mlp_bias()));
  REQUIRE(gptj.gelu == GeluKind::Tanh);  // the MLP keeps its bias: Megatron's fused bias-GELU choice
  REQUIRE_THROWS_WITH(
      stage_config_from_args(parse_train(with(minimal(), {"--disable-bias-attention", "--add-qkv-bias"})), 10),
      Catch::Contains("--add-qkv-bias"));
}

TEST_CASE("config: the --squared-relu and init flags reach the model, and squared ReLU is not gated (as in Megatron)") {
  const StageConfig c = stage_config_from_args(
      parse_train(
          with(minimal(), {"--squared-relu", "--init-method-xavier-uniform", "--embedding-init-method-std", "0.25"})),
      10);
  REQUIRE(c.squared_relu);
  REQUIRE(!c.fused_gelu_mlp());
  REQUIRE(c.init_method_xavier_uniform);
  REQUIRE(c.embedding_init_method_std == 0.25f);
  const StageConfig d = stage_config_from_args(parse_train(minimal()), 10);
  REQUIRE((!d.squared_relu && !d.init_method_xavier_uniform && !d.embedding_init_method_std));
  REQUIRE(rejection(with(minimal(), {"--squared-relu", "--swiglu"})).find("--squared-relu excludes --swiglu") !=
          std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--squared-relu", "--geglu"})).find("--squared-relu excludes --geglu") !=
          std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--squared-relu", "--gelu", "erf"})).find("--squared-relu") != std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--embedding-init-method-std", "0"}))
              .find("--embedding-init-method-std must be > 0") != std::string::npos);
}

TEST_CASE("config: --dry-run needs no data and plans for TP x PP processes by default") {
  std::vector<std::string> args = minimal();
  args.pop_back();  // no --mock-data, no --data-path
  REQUIRE(rejection(args, 1).find("no data") != std::string::npos);
  const TrainArgs a = parse_train(with(args, {"--dry-run", "--tensor-model-parallel-size", "2"}));
  REQUIRE(a.data_parallel_size == 1);
  const TrainArgs b =
      parse_train(with(args, {"--dry-run", "--tensor-model-parallel-size", "2", "--dry-run-world-size", "8"}));
  REQUIRE(b.data_parallel_size == 4);
  REQUIRE(rejection(with(args, {"--dry-run-world-size", "8"}), 1).find("needs --dry-run") != std::string::npos);
  REQUIRE(rejection(with(args, {"--dry-run", "--dry-run-world-size", "8"}), 8).find("mpirun") != std::string::npos);
}

TEST_CASE("config: YAML file with underscores or dashes, flags win") {
  const std::string path = write_temp("run.yaml",
                                      "num_layers: 6\n"
                                      "hidden-size: 128\nnorm_epsilon: 1.0e-6\n"
                                      "lr: 3.0e-4\n"
                                      "data_path: [\"1.0\", \"/x/a_text_document\"]\n"
                                      "mock_data: false\n"
                                      "swiglu: true\n");
  std::vector<std::string> args = minimal();
  args.pop_back();  // no --mock-data: the data comes from --data-path
  const TrainArgs a = parse_train(with(args, {"--config", path, "--lr", "5e-4", "--data-path", "/y/b"}));
  REQUIRE(*a.model.num_layers == 2);    // the flag wins over YAML
  REQUIRE(*a.model.hidden_size == 64);  // the flag wins over YAML
  REQUIRE(*a.schedule.lr == 5e-4);
  REQUIRE(a.model.swiglu);
  REQUIRE(a.model.norm_epsilon == 1e-6);  // from YAML only
  REQUIRE(a.data.data_path == std::vector<std::string>{"/y/b"});
}

TEST_CASE("config: unknown, unimplemented and inconsistent flags are rejected with a reason") {
  REQUIRE(rejection(with(minimal(), {"--no-such-flag", "1"})).find("no-such-flag") != std::string::npos);
  const std::string r = rejection(with(minimal(), {"--use-torch-fsdp2"}));
  REQUIRE(r.find("--use-torch-fsdp2 is a Megatron flag that gptrain does not implement") != std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--moe-router-force-load-balancing"})).find("does not implement") !=
          std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--fp16", "--bf16"})).find("exclude") != std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--train-samples", "100"})).find("exactly one") != std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--save", "/tmp/x"})).find("--save-interval") != std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--position-embedding-type", "mrope"})).find("mrope") != std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--position-embedding-type", "yarn", "--rotary-interleaved"}))
              .find("yarn does not support --rotary-interleaved") != std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--lr-warmup-fraction", "0.1", "--lr-warmup-iters", "5"})).find("exclude") !=
          std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--lr-decay-style", "WSD"})).find("--lr-wsd-decay-iters") != std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--seq-length", "128"})).find("max-position-embeddings") != std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--num-layers", "two"})).find("not an integer") != std::string::npos);
  REQUIRE(rejection(with(minimal(), {"--tensor-model-parallel-size", "2"})).find("not divisible") != std::string::npos);
  const std::string bad = write_temp("bad.yaml", "num_layers: 2\nmoe_router_force_load_balancing: true\n");
  REQUIRE(rejection(with(minimal(), {"--config", bad})).find("bad.yaml:2") != std::string::npos);
  const std::string unk = write_temp("unk.yaml", "hidden_sise: 2\n");
  REQUIRE(rejection(with(minimal(), {"--config", unk})).find("unknown key 'hidden_sise'") != std::string::npos);
  // A second YAML document was ignored without a word; a leading or trailing "---" is one document.
  const std::string two = write_temp("two.yaml", "num_layers: 2\n---\nnum_layers: 4\n");
  REQUIRE(rejection(with(minimal(), {"--config", two})).find("two.yaml:3: a second YAML document") !=
          std::string::npos);
  const std::string cfg_dir = write_temp("cfg_dir.yaml", "");
  std::filesystem::remove(cfg_dir);
  std::filesystem::create_directory(cfg_dir);
  REQUIRE(rejection(with(minimal(), {"--config", cfg_dir})).find("cfg_dir.yaml: is a directory") != std::string::npos);
  std::filesystem::remove(cfg_dir);
  const std::string one = write_temp("one.yaml", "---\nnorm_epsilon: 1.0e-6\n---\n");
  REQUIRE(parse_train(with(minimal(), {"--config", one})).model.norm_epsilon == 1e-6);
}

TEST_CASE("config: the recomputation flags follow Megatron's rules and reach the model") {
  auto rc = [](std::vector<std::string> flags) {
    const TrainArgs a = parse_train(with(minimal(), flags));
    return stage_config_from_args(a, 100).recompute;
  };
  CHECK(rc({}).granularity == RecomputeGranularity::None);
  // --recompute-activations is selective; selective recomputes core_attn unless modules are named
  for (const auto& f : {std::vector<std::string>{"--recompute-activations"},
                        std::vector<std::string>{"--recompute-granularity", "selective"}}) {
    const RecomputeConfig r = rc(f);
    CHECK(r.selective());
    CHECK((r.core_attn && !r.mlp && !r.layernorm));
  }
  const RecomputeConfig mods = rc({"--recompute-granularity", "selective", "--recompute-modules", "mlp", "layernorm"});
  CHECK((!mods.core_attn && mods.mlp && mods.layernorm));
  const RecomputeConfig full =
      rc({"--recompute-granularity", "full", "--recompute-method", "block", "--recompute-num-layers", "2"});
  CHECK((full.full() && full.method == RecomputeMethod::Block && full.num_layers == 2));
  // the older spellings (Megatron's sc21 scripts): full, uniform, 1 layer per group unless told
  const RecomputeConfig old = rc({"--activations-checkpoint-method", "uniform"});
  CHECK((old.full() && old.method == RecomputeMethod::Uniform && old.num_layers == 1));
  CHECK(rc({"--checkpoint-activations", "--activations-checkpoint-num-layers", "3"}).num_layers == 3);
  // Megatron's refusals
  CHECK(contains(rejection(with(minimal(), {"--recompute-granularity", "full"})), "needs --recompute-method"));
  CHECK(contains(rejection(with(minimal(), {"--recompute-granularity", "full", "--recompute-method", "uniform"})),
                 "needs --recompute-num-layers"));
  CHECK(contains(rejection(with(minimal(), {"--recompute-granularity", "selective", "--recompute-method", "uniform"})),
                 "--recompute-method is not supported with --recompute-granularity selective"));
  CHECK(contains(rejection(with(minimal(), {"--recompute-granularity", "selective", "--recompute-num-layers", "1"})),
                 "--recompute-num-layers must be unset"));
  CHECK(contains(rejection(with(minimal(), {"--recompute-granularity", "partial"})), "expected full or selective"));
  CHECK(contains(rejection(with(minimal(), {"--recompute-granularity", "full", "--recompute-method", "blocks",
                                            "--recompute-num-layers", "1"})),
                 "expected uniform or block"));
  CHECK(contains(rejection(with(minimal(), {"--recompute-granularity", "full", "--recompute-method", "uniform",
                                            "--recompute-num-layers", "0"})),
                 ">= 1"));
  CHECK(contains(
      rejection(with(minimal(), {"--recompute-granularity", "selective", "--recompute-modules", "mla_up_proj"})),
      "multi-latent attention"));
  CHECK(contains(
      rejection(with(minimal(), {"--recompute-granularity", "selective", "--recompute-modules", "shared_experts"})),
      "moe recomputes the whole MoE MLP"));
  CHECK(contains(rejection(with(minimal(), {"--recompute-granularity", "selective", "--recompute-modules", "attn"})),
                 "expected core_attn, mlp, layernorm, moe or moe_act"));
  CHECK(contains(rejection(with(minimal(), {"--recompute-method", "uniform"})), "need --recompute-granularity full"));
  CHECK(
      contains(rejection(with(minimal(), {"--recompute-modules", "mlp"})), "needs --recompute-granularity selective"));
  CHECK(contains(
      rejection(with(minimal(), {"--activations-checkpoint-method", "uniform", "--recompute-granularity", "full"})),
      "give one spelling"));
  // --distribute-saved-activations: full only, TP > 1, not with sequence parallelism (Megatron's rules)
  const std::vector<std::string> full1 = {
      "--recompute-granularity",       "full", "--recompute-method", "uniform", "--recompute-num-layers", "1",
      "--distribute-saved-activations"};
  CHECK(contains(rejection(with(minimal(), full1)), "needs --tensor-model-parallel-size > 1"));
  const std::vector<std::string> tp2 = with(with(minimal(), full1), {"--tensor-model-parallel-size", "2"});
  CHECK(contains(rejection(with(tp2, {"--sequence-parallel"}), 2), "must be off with --sequence-parallel"));
  CHECK(contains(rejection(with(minimal(), {"--recompute-activations", "--distribute-saved-activations"})),
                 "applies to --recompute-granularity full"));
  CHECK(stage_config_from_args(parse_train(tp2, 2), 100).recompute.distribute_saved_activations);
}

TEST_CASE("config: args JSON holds every flag with Megatron's underscore names") {
  const nlohmann::json j = train_args_to_json(parse_train(minimal()));
  REQUIRE(j.at("num_layers") == 2);
  REQUIRE(j.at("hidden_dropout") == 0.1);
  REQUIRE(j.at("save").is_null());
  REQUIRE(j.at("num_micro_batches") == 1);
}

TEST_CASE("config: the fp16 loss-scaling flags reach the loss scaler") {
  // --fp16 runs only on the CUDA backend, so this drives the loop's scaler from the parsed flags directly.
  const TrainArgs none = parse_train(minimal());
  REQUIRE(LossScaler::from_flags(none.precision).kind() == LossScaler::Kind::None);
  const TrainArgs dyn = parse_train(with(minimal(), {"--fp16", "--initial-loss-scale", "1024", "--min-loss-scale", "4",
                                                     "--loss-scale-window", "7", "--hysteresis", "3"}));
  // Observed through the scaler's behaviour: 3 overflows before the first halving (--hysteresis), halving
  // down to 4 and no further (--min-loss-scale), doubling after 7 clean iterations (--loss-scale-window).
  LossScaler d = LossScaler::from_flags(dyn.precision);
  REQUIRE(d.kind() == LossScaler::Kind::Dynamic);
  REQUIRE(d.scale() == 1024);
  d.update(true), d.update(true);
  REQUIRE(d.scale() == 1024);
  d.update(true);
  REQUIRE(d.scale() == 512);
  for (int i = 0; i < 10; ++i) d.update(true);
  REQUIRE(d.scale() == 4);
  LossScaler w = LossScaler::from_flags(dyn.precision);
  for (int i = 0; i < 6; ++i) w.update(false);
  REQUIRE(w.scale() == 1024);
  w.update(false);
  REQUIRE(w.scale() == 2048);
  const LossScaler c = LossScaler::from_flags(parse_train(with(minimal(), {"--fp16", "--loss-scale", "8"})).precision);
  REQUIRE(c.kind() == LossScaler::Kind::Constant);
  REQUIRE(c.scale() == 8);
}

TEST_CASE("config: batch ramp-up needs --train-samples, a step schedule replaces --global-batch-size") {
  TrainArgs a = parse_train(by_samples({"--global-batch-size", "64", "--rampup-batch-size", "16", "16", "300"}));
  CHECK(a.num_micro_batches == 16);  // the largest batch (memory plan)
  CHECK(*a.training.global_batch_size == 64);
  a = parse_train(by_samples({"--step-batch-size-schedule", "0:8 1K:16 2.5K:32"}));
  CHECK(*a.training.global_batch_size == 32);
  CHECK(a.num_micro_batches == 8);
  a = parse_train(by_samples({"--global-batch-size", "30", "--decrease-batch-size-if-needed"}), 2);
  CHECK(a.num_micro_batches == 3);

  // Megatron refuses a ramp with --train-iters although its GPT-3 example passes it: gptrain runs it.
  const auto iters = by_samples({"--global-batch-size", "64", "--rampup-batch-size", "16", "16", "300"}, true);
  CHECK(parse_train(iters).num_micro_batches == 16);
  CHECK(contains(rejection(by_samples({"--step-batch-size-schedule", "0:8 1K:32"}, true)),
                 "--step-batch-size-schedule needs sample-based training (--train-samples)"));
  CHECK(contains(rejection(by_samples({"--global-batch-size", "32", "--step-batch-size-schedule", "0:8 1K:32"})),
                 "--step-batch-size-schedule and --global-batch-size exclude each other"));
  CHECK(contains(rejection(by_samples({"--step-batch-size-schedule", "0:8 1K:32", "--decrease-batch-size-if-needed"})),
                 "exclude each other"));
  CHECK(contains(rejection(by_samples({"--global-batch-size", "64", "--rampup-batch-size", "16", "16", "300",
                                       "--step-batch-size-schedule", "0:64"})),
                 "exclude each other"));
  CHECK(contains(rejection(by_samples({"--global-batch-size", "64", "--rampup-batch-size", "16"})), "takes 3 values"));
  // A batch the ramp reaches that does not divide by mbs 4 x DP 2 = 8 stops a fresh run up front ...
  const std::vector<std::string> odd =
      by_samples({"--global-batch-size", "64", "--rampup-batch-size", "20", "22", "100"});
  CHECK(contains(rejection(odd, 2), "global batch size 20 at 0 consumed samples"));
  // ... is rounded with --decrease-batch-size-if-needed ...
  std::vector<std::string> dec = odd;
  dec.push_back("--decrease-batch-size-if-needed");
  CHECK(parse_train(dec, 2).num_micro_batches == 8);
  // ... and is checked as the run goes when resuming (the checkpoint's consumed samples decide).
  std::vector<std::string> resume = odd;
  resume.insert(resume.end(), {"--load", "/nonexistent"});
  CHECK(parse_train(resume, 2).num_micro_batches == 8);
}

TEST_CASE("config: --profile flags take Megatron's defaults and are validated") {
  const TrainArgs d = parse_train(minimal());
  CHECK(!d.logging.profile);
  CHECK(d.logging.profile_step_start == 10);
  CHECK(d.logging.profile_step_end == 12);
  CHECK(d.logging.profile_ranks == std::vector<int>{0});
  const TrainArgs a = parse_train(with(minimal(), {"--profile", "--profile-step-start", "2", "--profile-step-end", "4",
                                                   "--profile-ranks", "0", "3"}),
                                  4);
  CHECK(a.logging.profile);
  CHECK(a.logging.profile_step_start == 2);
  CHECK(a.logging.profile_step_end == 4);
  CHECK(a.logging.profile_ranks == std::vector<int>{0, 3});

  CHECK(rejection(with(minimal(), {"--profile", "--profile-step-start", "4", "--profile-step-end", "4"})) ==
        "--profile-step-end (4) must be greater than --profile-step-start (4): the profile covers iterations "
        "[start, end)");
  CHECK(rejection(with(minimal(), {"--profile", "--profile-step-start", "-1"})) ==
        "--profile-step-start must be >= 0 (got -1)");
  CHECK(rejection(with(minimal(), {"--profile", "--profile-ranks", "0", "2"}), 2) ==
        "--profile-ranks: rank 2 is outside the job's ranks 0..1");
  CHECK(rejection(with(minimal(), {"--profile", "--profile-ranks", "-1"})) ==
        "--profile-ranks: rank -1 is outside the job's ranks 0..0");
  CHECK(rejection(with(minimal(), {"--profile", "--profile-ranks", "x"}))
            .find("--profile-ranks: 'x' is not an integer") != std::string::npos);
  CHECK(rejection(with(minimal(), {"--use-pytorch-profiler"})).find("--use-pytorch-profiler") != std::string::npos);
  CHECK(rejection(with(minimal(), {"--use-pytorch-profiler"})).find("gptrain has no PyTorch") != std::string::npos);
}

TEST_CASE("config: --grad-reduce-in-bf16 parses into the parallel args") {
  CHECK(!parse_train(minimal()).parallel.grad_reduce_in_bf16);
  CHECK(parse_train(with(minimal(), {"--grad-reduce-in-bf16"})).parallel.grad_reduce_in_bf16);
}

TEST_CASE("config: the legacy --use-rotary-position-embeddings selects rope as in Megatron") {
  CHECK(parse_train(with(minimal(), {"--use-rotary-position-embeddings"})).model.position_embedding_type == "rope");
  CHECK(parse_train(
            with(minimal(), {"--position-embedding-type", "learned_absolute", "--use-rotary-position-embeddings"}))
            .model.position_embedding_type == "rope");
  // Old Llama scripts pair it with --no-position-embedding, which then needs no --position-embedding-type.
  CHECK(parse_train(with(minimal(), {"--use-rotary-position-embeddings", "--no-position-embedding"}))
            .model.position_embedding_type == "rope");
}

TEST_CASE("config: zero or negative widths and out-of-range seeds are refused, not replaced by defaults") {
  for (const char* v : {"0", "-5"}) {
    REQUIRE(contains(rejection(with(minimal(), {"--ffn-hidden-size", v})), "--ffn-hidden-size must be > 0"));
    REQUIRE(contains(rejection(with(minimal(), {"--kv-channels", v})), "--kv-channels must be > 0"));
  }
  REQUIRE(contains(rejection(with(minimal(), {"--seed", "-1"})), "--seed must be in [0, 2^32)"));
  REQUIRE(contains(rejection(with(minimal(), {"--seed", "4294967296"})), "--seed must be in [0, 2^32)"));
  REQUIRE(*parse_train(with(minimal(), {"--ffn-hidden-size", "96"})).model.ffn_hidden_size == 96);
  REQUIRE(parse_train(with(minimal(), {"--seed", "4294967295"})).training.seed == 4294967295);
  REQUIRE(contains(rejection(with(minimal(), {"--adam-eps", "inf"})), "a finite eps > 0"));
  for (const char* v : {"-1", "nan"})
    REQUIRE(contains(rejection(with(minimal(), {"--mid-level-dataset-surplus", v})),
                     "--mid-level-dataset-surplus must be a finite number >= 0"));
}

TEST_CASE(
    "config: --window-size is Megatron's (left, right) tuple and --window-attn-skip-freq N keeps every N-th layer "
    "full") {
  const std::vector<std::string> base = with(minimal(), {"--normalization", "RMSNorm", "--swiglu",
                                                         "--position-embedding-type", "rope", "--disable-bias-linear"});
  StageConfig c = stage_config_from_args(parse_train(base), 1000);
  CHECK(c.window_size == -1);
  CHECK(c.attention_window(0) == -1);
  CHECK(hf::default_family(c) == "llama");
  c = stage_config_from_args(parse_train(with(base, {"--window-size", "4095,0"})), 1000);
  CHECK(c.window_size == 4095);
  CHECK(c.attention_window(0) == 4095);
  CHECK(c.attention_window(1) == 4095);
  CHECK(hf::default_family(c) == "mistral");
  CHECK(stage_config_from_args(parse_train(with(base, {"--window-size", "(7,0)"})), 1000).window_size == 7);
  CHECK(stage_config_from_args(parse_train(with(base, {"--window-size", "-1,0"})), 1000).window_size == -1);
  c = stage_config_from_args(parse_train(with(base, {"--window-size", "3,0", "--window-attn-skip-freq", "2"})), 1000);
  CHECK(c.attention_window(0) == 3);        // layer 1 (Megatron counts from 1): windowed
  CHECK(c.attention_window(1) == -1);       // layer 2: full attention
  CHECK(hf::default_family(c) == "llama");  // not expressible as MistralForCausalLM
  CHECK(contains(rejection(with(base, {"--window-size", "3,2"})),
                 "--window-size \"3,2\": the right extent must be 0 (gptrain's attention is causal"));
  CHECK(contains(rejection(with(base, {"--window-size", "4096"})),
                 "--window-size \"4096\": expected two integers \"left,right\""));
  CHECK(contains(rejection(with(base, {"--window-size", "-2,0"})), "the left extent must be -1 (no window) or >= 0"));
  CHECK(contains(rejection(with(base, {"--window-attn-skip-freq", "2"})),
                 "--window-attn-skip-freq 2 needs --window-size"));
  CHECK(contains(rejection(with(base, {"--window-size", "3,0", "--window-attn-skip-freq", "[1,0]"})),
                 "a per-layer list is not implemented"));
  CHECK(contains(rejection(with(base, {"--window-size", "3,0", "--window-attn-skip-freq", "0"})),
                 "--window-attn-skip-freq must be >= 1 (got 0)"));
}

TEST_CASE("config: the MoE flags reach the model with Megatron's defaults, and what is not implemented is refused") {
  const std::vector<std::string> moe =
      with(minimal(), {"--num-experts", "4", "--disable-bias-linear", "--swiglu", "--normalization", "RMSNorm"});
  StageConfig c = stage_config_from_args(parse_train(moe), 1000);
  CHECK(c.moe.num_experts == 4);
  CHECK(c.moe.layer_pattern == std::vector<int>{1, 1});
  CHECK(c.moe.topk == 2);
  CHECK(c.moe.score == MoeScore::Softmax);
  CHECK(c.moe.balance == MoeBalance::AuxLoss);
  CHECK(c.moe.aux_loss_coeff == 0.0f);
  CHECK(c.moe.capacity_factor < 0.0);  // dropless
  CHECK(c.moe.ffn_hidden_size == c.ffn_hidden_size);
  CHECK(hf::default_family(c) == "mixtral");
  c = stage_config_from_args(parse_train(with(moe, {"--moe-layer-freq",
                                                    "([0]+[1])*1",
                                                    "--moe-router-topk",
                                                    "1",
                                                    "--moe-router-score-function",
                                                    "sigmoid",
                                                    "--moe-router-load-balancing-type",
                                                    "seq_aux_loss",
                                                    "--moe-aux-loss-coeff",
                                                    "0.01",
                                                    "--moe-z-loss-coeff",
                                                    "0.001",
                                                    "--moe-ffn-hidden-size",
                                                    "32",
                                                    "--moe-shared-expert-intermediate-size",
                                                    "48",
                                                    "--moe-expert-capacity-factor",
                                                    "1.5",
                                                    "--moe-token-drop-policy",
                                                    "position",
                                                    "--moe-pad-expert-input-to-capacity",
                                                    "--moe-router-topk-scaling-factor",
                                                    "2",
                                                    "--moe-router-pre-softmax"})),
                             1000);
  CHECK(c.moe.layer_pattern == std::vector<int>{0, 1});
  CHECK(c.moe.topk == 1);
  CHECK(c.moe.score == MoeScore::Sigmoid);
  CHECK(c.moe.balance == MoeBalance::SeqAuxLoss);
  CHECK(c.moe.aux_loss_coeff == 0.01f);
  CHECK(c.moe.z_loss_coeff == 0.001f);
  CHECK(c.moe.ffn_hidden_size == 32);
  CHECK(c.moe.shared_expert_intermediate_size == 48);
  CHECK(c.moe.capacity_factor == 1.5);
  CHECK(c.moe.drop_policy == MoeDropPolicy::Position);
  CHECK(c.moe.pad_to_capacity);
  CHECK(c.moe.topk_scaling_factor == 2.0f);
  CHECK(c.moe.pre_softmax);
  CHECK(hf::default_family(c) == "moe");  // a shared expert: no Mixtral layout
  CHECK(contains(rejection(with(moe, {"--moe-router-load-balancing-type", "sinkhorn", "--moe-aux-loss-coeff", "0.01"})),
                 "--moe-router-load-balancing-type sinkhorn takes no load-balancing loss: set --moe-aux-loss-coeff 0"));
  CHECK(stage_config_from_args(parse_train(with(moe, {"--moe-router-load-balancing-type", "sinkhorn"})), 1000)
            .moe.balance == MoeBalance::Sinkhorn);
  CHECK(contains(rejection(with(moe, {"--moe-layer-freq", "[1,1,1]"})), "gives 3 layers; --num-layers is 2"));
  // The model's own constraints (StageConfig::finalize): pretrain_gpt meets them before any work.
  auto model_rejection = [](std::vector<std::string> args) {
    return test::error_text([&] { stage_config_from_args(parse_train(std::move(args)), 1000); });
  };
  CHECK(contains(model_rejection(with(moe, {"--moe-router-topk", "5"})),
                 "--moe-router-topk 5 must be in [1, --num-experts 4]"));
  CHECK(contains(model_rejection(with(moe, {"--moe-pad-expert-input-to-capacity"})),
                 "needs --moe-expert-capacity-factor"));
  CHECK(contains(model_rejection(with(moe, {"--moe-shared-expert-gate"})),
                 "--moe-shared-expert-gate gates the shared expert: it needs --moe-shared-expert-intermediate-size"));
  c = stage_config_from_args(
      parse_train(with(moe, {"--moe-shared-expert-intermediate-size", "16", "--moe-shared-expert-gate"})), 1000);
  CHECK(c.moe.shared_expert_gate);
  CHECK(hf::default_family(c) == "moe");  // Qwen2-MoE's layout also has q/k/v biases
  c = stage_config_from_args(parse_train(with(moe, {"--moe-shared-expert-intermediate-size", "16",
                                                    "--moe-shared-expert-gate", "--add-qkv-bias"})),
                             1000);
  CHECK(hf::default_family(c) == "qwen2_moe");
  CHECK(contains(model_rejection(with(minimal(), {"--num-experts", "4"})), "--disable-bias-linear"));
  CHECK(contains(rejection(with(moe, {"--moe-token-dispatcher-type", "flex"})), "moe-token-dispatcher-type"));
  CHECK(contains(rejection(with(minimal(), {"--expert-model-parallel-size", "2"})), "needs --num-experts"));
  CHECK(contains(rejection(with(moe, {"--expert-model-parallel-size", "3"})), "must be divisible by"));
  // --expert-tensor-parallel-size: TP (the default) splits the experts over TP; 1 keeps them whole (EP 1 only).
  CHECK(contains(rejection(with(moe, {"--expert-tensor-parallel-size", "2"})),
                 "--expert-tensor-parallel-size 2 with --tensor-model-parallel-size 1"));
  CHECK(contains(rejection(with(moe, {"--tensor-model-parallel-size", "2", "--expert-tensor-parallel-size", "1",
                                      "--expert-model-parallel-size", "4"}),
                           8),
                 "Megatron's expert-model-parallel groups then span the TP ranks and data-parallel ranks"));
  CHECK(stage_config_from_args(parse_train(with(moe, {"--tensor-model-parallel-size", "2"}), 2), 1000).etp_size == 2);
  CHECK(
      stage_config_from_args(
          parse_train(with(moe, {"--tensor-model-parallel-size", "2", "--expert-tensor-parallel-size", "1"}), 2), 1000)
          .etp_size == 1);
  CHECK(contains(rejection(with(moe, {"--moe-expert-capacity-factor", "0"})), "must be > 0"));
}
