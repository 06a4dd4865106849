// The MoE MLP (core/model/moe_layer.cpp) against the dense MLP of the same active parameters, forward +
// backward, on the backend's CPU twin, in the same run: a Mixtral-like MoE MLP of 8 SwiGLU experts of
// width FE, top-2 (router, dispatch plan, permute, expert GEMMs, unpermute, backward with the
// load-balancing loss) vs a dense SwiGLU MLP of width 2 FE (the same expert parameters per token, the
// router aside). Tokens per second of forward + backward; best of --reps, and the process CPU time, which
// stays meaningful on a loaded machine.
//   bench_moe_layer [--C 512] [--FE 512] [--B 4] [--T 256] [--reps 5]
#include "core/model/gpt_stage.h"
#include "core/model/layers.h"
#include "core/model/stage_activations.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <random>
#include <string>

using namespace gptrain;

namespace {

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

struct Best {
  double wall = 1e30, cpu = 1e30;
};

Best time_of(const std::function<void()>& f, int reps) {
  f();  // warm-up
  Best b;
  for (int r = 0; r < reps; ++r) {
    const double c0 = cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    b.wall = std::min(b.wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    b.cpu = std::min(b.cpu, cpu_seconds() - c0);
  }
  return b;
}

// One decoder layer (no embedding, no head) whose MLP is dense of width F or MoE (8 experts of width F / 2).
StageConfig layer_config(int C, int F, int B, int T, bool moe) {
  StageConfig c;
  c.num_layers = 1;
  c.hidden_size = C;
  c.num_attention_heads = C / 64;
  c.seq_length = T;
  c.micro_batch_size = B;
  c.vocab_size = 128;
  c.normalization = Normalization::RMSNorm;
  c.position_embedding = PositionEmbedding::Rope;
  c.swiglu = true;
  c.add_bias_linear = false;
  c.hidden_dropout = c.attention_dropout = 0.0f;
  c.has_embedding = c.has_head = false;
  c.ffn_hidden_size = F;
  if (moe) {
    c.moe.num_experts = 8;
    c.moe.topk = 2;
    c.moe.ffn_hidden_size = F / 2;
    c.moe.aux_loss_coeff = 0.01f;
  }
  c.finalize(128);
  return c;
}

struct Run {
  Best best;
  std::size_t active_params = 0;
};

Run run(int C, int F, int B, int T, bool moe, int reps) {
  const StageConfig cfg = layer_config(C, F, B, T, moe);
  auto be = make_backend("cpu", DType::F32);
  GptStage st(cfg, *be);
  st.init_parameters();
  auto a = st.make_activations();
  const LocalSizes& s = st.sizes();
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(std::size_t(s.N) * C), dy(x.size());
  for (float& v : x) v = d(rng);
  for (float& v : dy) v = d(rng);
  LayerActivations& la = a->layers[0];
  be->copy_to_device(la.ln2_full, x.data(), x.size() * 4);
  be->copy_to_device(a->dres, dy.data(), dy.size() * 4);
  const std::string p = "decoder.layers.0.mlp.";
  auto w = [&](const std::string& n) -> const void* { return st.layout().find(p + n) ? st.param(p + n) : nullptr; };
  auto g = [&](const std::string& n) { return st.layout().find(p + n) ? st.grad(p + n) : nullptr; };
  LayerWeights lw{};
  LayerGrads lg{};
  lw.fc1_w = w("linear_fc1.weight"), lw.fc2_w = w("linear_fc2.weight");
  lg.fc1_w = g("linear_fc1.weight"), lg.fc2_w = g("linear_fc2.weight");
  lw.moe = {w("router.weight"), w("experts.linear_fc1.weight"), w("experts.linear_fc2.weight"), nullptr, nullptr};
  lg.moe = {g("router.weight"), g("experts.linear_fc1.weight"), g("experts.linear_fc2.weight"), nullptr, nullptr};
  const LayerContext ctx{*be, no_parallel_hooks(), st.config(), s};
  Run r;
  for (const ParamTensor& t : st.layout().tensors)
    if (t.name.find(".mlp.") != std::string::npos) r.active_params += t.expert ? t.numel / 8 * 2 : t.numel;
  r.best = time_of(
      [&] {
        if (moe) {
          moe_mlp_forward(ctx, lw.moe, *a, 0, a->tmp_full);
          moe_mlp_backward(ctx, lw.moe, lg.moe, *a, 0, a->dres, a->dln_full);
        } else {
          mlp_activation_forward(ctx, lw, *a, 0);
          be->matmul_forward(a->tmp_full, la.act, lw.fc2_w, nullptr, s.N, s.F, C);
          dense_mlp_backward(ctx, lw, lg, *a, 0, a->dres, a->dln_full);
        }
      },
      reps);
  return r;
}

int arg(int argc, char** argv, const char* name, int fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::stoi(argv[i + 1]);
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const int C = arg(argc, argv, "--C", 512), FE = arg(argc, argv, "--FE", 512), B = arg(argc, argv, "--B", 4),
            T = arg(argc, argv, "--T", 256), reps = arg(argc, argv, "--reps", 5);
  const double N = double(B) * T;
  std::printf("MLP forward + backward, C %d, %g tokens, SwiGLU, fp32 CPU (best of %d)\n", C, N, reps);
  std::printf("%-34s %14s %10s %12s %14s\n", "MLP", "active params", "wall ms", "tokens/s", "tokens/cpu-s");
  const Run dense = run(C, 2 * FE, B, T, false, reps), moe = run(C, 2 * FE, B, T, true, reps);
  auto row = [&](const char* name, const Run& r) {
    std::printf("%-34s %14zu %10.1f %12.0f %14.0f\n", name, r.active_params, r.best.wall * 1e3, N / r.best.wall,
                N / r.best.cpu);
  };
  row(("dense SwiGLU, width " + std::to_string(2 * FE)).c_str(), dense);
  row(("MoE 8 x " + std::to_string(FE) + " top-2 (+ router)").c_str(), moe);
  std::printf("MoE / dense time: %.2fx wall, %.2fx CPU\n", moe.best.wall / dense.best.wall,
              moe.best.cpu / dense.best.cpu);
  return 0;
}
