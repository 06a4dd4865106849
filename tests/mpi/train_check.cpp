// mpi_train_check: trains a tiny GPT for a few iterations on synthetic tokens with any TP/PP/DP layout
// through the training path's own pieces (DistributedGpt + DataParallelOptimizer behind ParallelRunner,
// the runner pretrain_gpt's loop drives) and prints one line per iteration from rank 0:
//     iter 3 loss 5.545177221e+00 grad_norm 1.234567890e+00
//     eval 10 loss 4.5e+00        (forward-only pipeline on the next global batch, after training)
// --dropout P turns hidden and attention dropout on; the --recompute-*, --cpu-offloading* and
// --optimizer-cpu-offload flags, and the MoE flags (--num-experts, --moe-*, with --arch llama), are pretrain_gpt's.
// The loss is the global batch's token mean. With --print-bits the iter lines end with the loss and
// norm as hex floats (" bits 0x1.6...p+2 ..."), for bitwise comparisons, and every iteration adds the
// data-parallel bucket counts of rank 0:
//     grad_sync 3 buckets 9 in_backward 7 max_in_flight 2 param_gathers_in_forward 9
// With --dump-grads DIR the first iteration also writes each rank's gradients (every chunk's buffer,
// fp32, back to back) before the data-parallel reduction (DIR/local_RANK.f32) and after it
// (DIR/reduced_RANK.f32; plain data parallelism only: the distributed optimizer keeps shards). With
// --overlap-grad-reduce the reduction has started before the first dump, which then shows it begun.
// With --dump-params DIR each rank writes its parameters after the last iteration (DIR/params_RANK.f32).
// The mpi tests compare these lines between layouts and the single process (world 1). Samples follow
// Megatron's order (docs/megatron-compat.md §2.4): global batch k holds samples [k*gbs, (k+1)*gbs); each
// round of mbs*dp consecutive samples gives DP rank r the r-th block of mbs. Under expert parallelism
// rank 0 ends with "expert exchange buffers U bytes, planned P" (every rank fails when its U > P); under
// context parallelism likewise "context exchange buffers U bytes, planned P" (the K/V ring).
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/config/flag_table.h"
#include "core/config/train_args.h"
#include "core/optim/grad_clip.h"
#include "core/train/setup.h"
#include "parallel/comm/grid_comms.h"
#include "parallel/launch/local_gpu.h"
#include "parallel/launch/mpi_runtime.h"
#include "parallel/plan/expert_exchange.h"
#include "parallel/plan/memory_plan.h"
#include "parallel/train/parallel_runner.h"

#include <cmath>
#include <cstdio>
#include <fstream>

namespace {
using namespace gptrain;
using namespace gptrain::parallel;

// Deterministic synthetic sample: a noisy repeating pattern the model can learn a little.
void fill_sample(int64_t sample, int T, int vocab, int32_t* tokens, int32_t* labels) {
  uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(sample + 1);
  auto next = [&] {
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    return x * 2685821657736338717ull;
  };
  std::vector<int32_t> seq(T + 1);
  const int period = 3 + static_cast<int>(next() % 5);
  for (int t = 0; t <= T; ++t)
    seq[t] = (next() % 4 == 0) ? static_cast<int32_t>(next() % vocab) : static_cast<int32_t>((t % period) * 7 % vocab);
  for (int t = 0; t < T; ++t) {
    tokens[t] = seq[t];
    labels[t] = seq[t + 1];
  }
}

int body(MpiRuntime& mpi, int argc, char** argv) {
  TrainArgs a;  // its parallel and backend flags, bound from pretrain_gpt's table
  int iters = 10, gbs = 8, mbs = 2, layers = 4, save_at = 0, vocab = 250;
  std::string arch = "gpt2", save_dir, load_dir, dump_dir, params_dir;
  bool print_bits = false;
  float dropout = 0.0f;
  FlagTable t = train_flag_table(a).only_groups({"parallel", "backend", "recompute", "offload", "moe"});
  t.group("mpi_train_check");
  t.value("train-iters", &iters, "iterations");
  t.value("global-batch-size", &gbs, "samples per iteration");
  t.value("micro-batch-size", &mbs, "samples per micro-batch");
  t.value("num-layers", &layers, "transformer layers");
  t.value("vocab-size", &vocab, "vocabulary (padded to a multiple of 128 x TP)");
  t.value("dropout", &dropout, "hidden and attention dropout (default 0)");
  t.choice("arch", &arch, {"gpt2", "llama", "untied"}, "model family switches");
  t.value("save", &save_dir, "checkpoint directory");
  t.value("save-at", &save_at, "iteration after which to save (with --load: the loaded one saves it at once)");
  t.value("load", &load_dir, "checkpoint directory to resume from");
  t.flag("print-bits", &print_bits, "exact loss/norm bits and gradient-bucket counts per iteration");
  t.value("dump-grads", &dump_dir, "directory for the first iteration's gradients before / after the DP reduction");
  t.value("dump-params", &params_dir, "directory for every rank's parameters after the last iteration");
  t.choice("optimizer", &a.parallel.optimizer, {"adam", "sgd", "muon", "lion"},
           "adam (AdamW, LR 3e-3), sgd (momentum 0.9, LR 0.1: its state is one momentum buffer), muon (Muon with "
           "Megatron's defaults but an fp32 Newton-Schulz, AdamW for the rest; LR 3e-3) or lion (Lion with Adam's "
           "betas on the 2-D weights, AdamW for the rest; LR 1e-3)");
  if (!t.parse("mpi_train_check", argc, argv)) return 0;
  apply_megatron_fsdp(a.parallel);
  validate_parallel_args(a.parallel);
  ProcessGrid grid(mpi.world_size(), mpi.rank(), grid_sizes(a.parallel));
  std::unique_ptr<Backend> be = make_training_backend(a, local_gpu(a, mpi.launch()));
  GridComms comms = make_grid_comms(grid, comm_options(a.parallel, a.backend, be.get()),
                                    comm_transport(a.parallel, be->name(), true));

  StageConfig mc;
  mc.num_layers = layers;
  mc.hidden_size = 32;
  mc.num_attention_heads = 4;
  mc.ffn_hidden_size = 64;
  mc.seq_length = 16;
  mc.max_position_embeddings = 16;
  mc.vocab_size = vocab;  // 250 (default): padded to 256 at TP 1 and 2 (divisible by 128 * TP)
  mc.hidden_dropout = dropout;
  mc.attention_dropout = dropout;
  mc.recompute = recompute_config_from_args(a.recompute, layers);
  mc.cpu_offload_layers = cpu_offload_layers_from_args(a.activation_offload);
  mc.micro_batch_size = mbs;
  mc.moe = moe_config_from_args(a.moe, layers);  // --num-experts and the --moe-* flags (MoE needs --arch llama)
  if (arch == "llama") {
    mc.normalization = Normalization::RMSNorm;
    mc.position_embedding = PositionEmbedding::Rope;
    mc.swiglu = true;
    mc.num_query_groups = 2;
    mc.add_bias_linear = false;
    mc.untie_embeddings_and_output_weights = true;
  } else if (arch == "untied") {
    mc.untie_embeddings_and_output_weights = true;
  }
  const int dp = grid.dp_size();
  check(gbs % (mbs * dp) == 0, "--global-batch-size {} is not divisible by --micro-batch-size {} x DP {}", gbs, mbs,
        dp);
  const int m = gbs / (mbs * dp);

  DistributedGpt model(mc, 128, a.parallel, grid, comms, *be);
  model.init_parameters();
  AdamWHyper hyper;
  const bool sgd = a.parallel.optimizer == "sgd";
  if (sgd) hyper.rule = UpdateRule::sgd;
  const bool lion = a.parallel.optimizer == "lion";
  if (lion) hyper.rule = UpdateRule::lion;  // betas: Adam's, as pretrain_gpt's --optimizer lion
  MuonHyper muon;
  muon.ns.bf16 = false;  // layouts compared within 1e-6 sum in other orders: no bf16 rounding to amplify it
  DataParallelOptimizer opt(model, hyper, muon);
  if (mpi.rank() == 0) log::info("optimizer: {}", opt.describe());
  ParallelRunner runner(model, opt);
  const float lr = sgd ? 0.1f : lion ? 1e-3f : 3e-3f, weight_decay = 0.1f, clip_grad = 1.0f;
  int start = 0;
  if (!load_dir.empty()) {
    const checkpoint::Checkpoint ck = checkpoint::Checkpoint::open(load_dir);
    runner.load(ck, true);
    start = static_cast<int>(ck.metadata().iteration);
    opt.set_steps(start);  // one optimizer step per iteration before the save
    if (mpi.rank() == 0) log::info("loaded iteration {} from {}", start, load_dir);
  }

  const int T = mc.seq_length;
  auto make_batch = [&](int it) {
    std::vector<HostMicroBatch> batch(m);
    for (int j = 0; j < m; ++j) {
      HostMicroBatch& b = batch[j];
      b.tokens.resize(mbs * T);
      b.labels.resize(mbs * T);
      b.loss_mask.assign(mbs * T, 1.0f);
      b.position_ids.resize(mbs * T);
      for (int i = 0; i < mbs; ++i) {
        const int64_t sample = int64_t(it) * gbs + int64_t(j) * mbs * dp + int64_t(grid.dp_rank()) * mbs + i;
        fill_sample(sample, T, mc.vocab_size, b.tokens.data() + i * T, b.labels.data() + i * T);
        for (int t = 0; t < T; ++t) b.position_ids[i * T + t] = t;
        // A few masked positions so per-micro-batch token counts differ.
        if (sample % 3 == 0) b.loss_mask[i * T + (sample % T)] = 0.0f;
      }
      // Dropout masks keyed by the micro-batch's first sample: the same masks in every DP layout.
      b.dropout_seed = uint64_t(int64_t(it) * gbs + int64_t(j) * mbs * dp + int64_t(grid.dp_rank()) * mbs) + 1;
    }
    return batch;
  };
  // Every chunk's gradient (or parameter) buffer, back to back, to DIR/NAME_RANK.f32 (fp32 backend).
  auto dump_to = [&](const std::string& dir, const char* name, bool params) {
    std::vector<float> all;
    for (int c = 0; c < model.num_chunks(); ++c) {
      GptStage& st = model.chunk(c);
      std::vector<float> g(st.layout().total);
      be->copy_to_host(g.data(), params ? st.params() : st.grads(), g.size() * sizeof(float));
      all.insert(all.end(), g.begin(), g.end());
    }
    std::ofstream f(fmt::format("{}/{}_{}.f32", dir, name, mpi.rank()), std::ios::binary);
    f.write(reinterpret_cast<const char*>(all.data()), std::streamsize(all.size() * sizeof(float)));
    check(f.good(), "cannot write to {}", dir);
  };
  auto dump = [&](const char* name) { dump_to(dump_dir, name, false); };
  auto save = [&](int iteration) {
    runner.save(save_dir, checkpoint::Step::at(iteration), checkpoint::Metadata{}, true);
    if (mpi.rank() == 0) log::info("saved iteration {} to {}", iteration, save_dir);
  };
  // --save-at equal to the loaded iteration: save what was loaded, in this run's layout (resharding checks).
  if (!save_dir.empty() && !load_dir.empty() && save_at == start) save(start);
  for (int it = start; it < iters; ++it) {
    std::vector<HostMicroBatch> batch = make_batch(it);
    LossTotals lt;
    if (!dump_dir.empty() && it == start) {  // ParallelRunner::train_batch, with a look before the reduction
      model.zero_grads();
      lt = model.run_pipeline(batch, true, 1.0, LossNormalization::per_micro_batch);
      model.finish_model_parallel_grads();
      dump("local");
      opt.reduce_gradients();
      if (!opt.distributed()) dump("reduced");
    } else {
      lt = runner.train_batch(batch, 1.0, LossNormalization::per_micro_batch);
    }
    const double norm = std::sqrt(runner.grad_sum_squares());
    runner.optimizer_step(lr, lr, weight_decay, static_cast<float>(clip_coefficient(norm, clip_grad)));
    const double loss = lt.mean();
    if (mpi.rank() == 0 && print_bits) {
      const GradSync::Stats& gs = opt.last_reduction();
      std::printf("iter %d loss %.9e grad_norm %.9e bits %a %a\n", it + 1, loss, norm, loss, norm);
      std::printf("grad_sync %d buckets %d in_backward %d max_in_flight %d param_gathers_in_forward %d\n", it + 1,
                  gs.buckets, gs.launched_in_backward, gs.max_in_flight, opt.param_gathers_in_last_forward());
    } else if (mpi.rank() == 0) {
      std::printf("iter %d loss %.9e grad_norm %.9e\n", it + 1, loss, norm);
    }
    std::fflush(stdout);
    if (!save_dir.empty() && it + 1 == save_at) save(it + 1);
  }
  // Expert tensor parallelism: the rows summed over the ETP group per step, against the plan's count (uniform
  // routing: exact when dropless with EP 1, where every rank's experts get all N x K rows).
  if (const std::size_t elems = model.expert_partial_sum_elems(); elems > 0 && mpi.rank() == 0) {
    ExpertExchangeShape shape;
    shape.tokens = mbs * mc.seq_length;
    shape.topk = mc.moe.topk;
    shape.num_experts = mc.moe.num_experts;
    shape.capacity_factor = mc.moe.capacity_factor;
    shape.pad_to_capacity = mc.moe.pad_to_capacity;
    int moe_layers = 0;
    for (int c = 0; c < model.num_chunks(); ++c)
      for (int l = model.chunk(c).config().layer_first; l < model.chunk(c).config().layer_last; ++l)
        moe_layers += mc.moe.is_moe_layer(l) ? 1 : 0;
    std::printf("expert partial sums %.0f rows per step, planned %.0f\n",
                double(elems) / mc.hidden_size / (iters - start),
                expert_partial_sum_rows_per_step(shape, moe_layers, m));
  }
  if (!params_dir.empty()) {
    opt.finish_param_gather();
    dump_to(params_dir, "params", true);
  }
  // Evaluation (forward-only pipeline, dropout off) on the next, unseen global batch.
  std::vector<HostMicroBatch> eval_batch = make_batch(iters);
  const LossTotals ev = runner.eval_batch(eval_batch);
  if (mpi.rank() == 0) std::printf("eval %d loss %.9e\n", iters, ev.mean());
  // Expert parallelism: the token exchange's buffers, grown to the largest layer call of the run, stay
  // within the memory plan's bound (every rank checks its own).
  if (const std::size_t used = model.expert_exchange_bytes()) {
    const std::size_t planned = memory_plan(mc, 128, a.parallel, grid.pp_rank(), dp, m, *be).expert_exchange;
    check(used <= planned, "rank {}: the expert exchange buffers hold {} bytes, the memory plan counts {}", mpi.rank(),
          used, planned);
    if (mpi.rank() == 0) std::printf("expert exchange buffers %zu bytes, planned %zu\n", used, planned);
  }
  // The distributed optimizer's shard arrays (moments, masters, reduced gradients) are as long as the plan
  // counts, also with hybrid sharding (every rank checks its own). Muon's layer-wise optimizer has no shards.
  if (opt.distributed() && opt.optimizer_name() != "muon") {
    std::size_t used = 0, planned = 0;
    for (int c = 0; c < model.num_chunks(); ++c)
      if (!opt.buckets(c).empty()) used += opt.buckets(c).back().shard_offset + opt.buckets(c).back().shard;
    for (std::size_t n : stage_parameter_counts(mc, 128, a.parallel, grid.pp_rank(), grid.dp_cp_size()).shard)
      planned += n;
    check(used == planned, "rank {}: the optimizer shards hold {} elements, the memory plan counts {}", mpi.rank(),
          used, planned);
    if (mpi.rank() == 0) std::printf("optimizer shard elements %zu, planned %zu\n", used, planned);
  }
  // Context parallelism: the K/V ring's buffers stay within the memory plan's count.
  if (const ContextParallelHooks* cph = model.context_hooks()) {
    const std::size_t used = cph->buffer_bytes();
    const std::size_t planned =
        memory_plan(mc, 128, a.parallel, grid.pp_rank(), grid.dp_cp_size(), m, *be).context_exchange;
    check(used <= planned, "rank {}: the context-parallel buffers hold {} bytes, the memory plan counts {}", mpi.rank(),
          used, planned);
    if (mpi.rank() == 0) std::printf("context exchange buffers %zu bytes, planned %zu\n", used, planned);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::parallel::run_mpi_main("mpi_train_check", body, argc, argv); }
