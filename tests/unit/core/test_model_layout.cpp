// Parameter layout and init: decayed tensors contiguous first, GPT-2 124M parameter count, and init
// values independent of tensor-parallel sharding (TP2 slices reassemble to the TP1 tensors bitwise); the
// stochastic-rounding runs map every local element to its global index.
#include "core/model/init_rng.h"
#include "core/model/param_layout.h"
#include "core/optim/stochastic_rounding.h"
#include "kernels/adamw/adamw_math.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

using namespace gptrain;

namespace {

StageConfig tiny(int tp, int rank, void (*model)(StageConfig&) = nullptr) {
  StageConfig c;
  c.num_layers = 2;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.num_query_groups = 2;
  c.seq_length = 8;
  c.vocab_size = 60;
  c.swiglu = true;
  c.ffn_hidden_size = 48;
  c.add_bias_linear = true;
  c.untie_embeddings_and_output_weights = true;
  c.tp_size = tp;
  c.tp_rank = rank;
  if (model) model(c);
  c.finalize(16);
  return c;
}

void xavier_and_embedding_std(StageConfig& c) {
  c.init_method_xavier_uniform = true;
  c.embedding_init_method_std = 0.5f;
}

}  // namespace

TEST_CASE("param layout: decayed tensors first and contiguous, GPT-2 124M count") {
  StageConfig c;
  c.num_layers = 12, c.hidden_size = 768, c.num_attention_heads = 12, c.seq_length = 1024;
  c.max_position_embeddings = 1024, c.vocab_size = 50257;
  c.finalize(128);
  REQUIRE(c.padded_vocab_size == 50304);
  const ParamLayout l = build_param_layout(c);
  REQUIRE(l.total == 124475904u);  // llm.c's count for GPT-2 124M with the padded vocabulary
  std::size_t off = 0;
  bool in_decay = true;
  for (const auto& t : l.tensors) {
    REQUIRE(t.offset == off);
    if (!t.decay) in_decay = false;
    REQUIRE(t.decay == in_decay);  // never a decayed tensor after a non-decayed one
    REQUIRE(t.decay == (t.global_shape.size() == 2));
    off += t.numel;
  }
  REQUIRE(off == l.total);
  REQUIRE(l.at("decoder.layers.11.mlp.linear_fc2.weight").init_std == Approx(0.02 / std::sqrt(24.0)));
  REQUIRE(l.find("output_layer.weight") == nullptr);  // tied
}

TEST_CASE("param layout: --disable-bias-attention drops the qkv and attention-output biases only") {
  StageConfig c = tiny(1, 0);
  const ParamLayout with = build_param_layout(c);
  c.disable_bias_attention = true;
  c.finalize(16);
  const ParamLayout without = build_param_layout(c);
  const std::string p = "decoder.layers.1.";
  REQUIRE(with.find(p + "self_attention.linear_qkv.bias") != nullptr);
  REQUIRE(without.find(p + "self_attention.linear_qkv.bias") == nullptr);
  REQUIRE(without.find(p + "self_attention.linear_proj.bias") == nullptr);
  REQUIRE(without.find(p + "mlp.linear_fc1.bias") != nullptr);
  REQUIRE(without.find(p + "mlp.linear_fc2.bias") != nullptr);
  const std::size_t qkv = std::size_t((c.num_attention_heads + 2 * c.num_query_groups) * c.kv_channels);
  REQUIRE(with.total - without.total == std::size_t(c.num_layers) * (qkv + std::size_t(c.hidden_size)));
  // Contradictions are rejected, naming the flags.
  StageConfig bad = tiny(1, 0);
  bad.disable_bias_attention = true;
  bad.add_qkv_bias = true;
  REQUIRE_THROWS_WITH(bad.finalize(16),
                      Catch::Contains("--disable-bias-attention") && Catch::Contains("--add-qkv-bias"));
  bad.add_qkv_bias = false;
  bad.add_bias_linear = false;
  REQUIRE_THROWS_WITH(bad.finalize(16),
                      Catch::Contains("--disable-bias-attention") && Catch::Contains("--disable-bias-linear"));
}

namespace {

void check_tp_slices_reassemble(void (*model)(StageConfig&)) {
  const StageConfig c1 = tiny(1, 0, model);
  const ParamLayout l1 = build_param_layout(c1);
  std::map<std::string, std::vector<float>> full;
  for (const auto& t : l1.tensors) {
    full[t.name].resize(t.numel);
    init_param_values(t, c1.seed, full[t.name].data());
  }
  std::map<std::string, std::vector<int>> covered;  // how often each global element was produced
  for (int r = 0; r < 2; ++r) {
    const StageConfig c2 = tiny(2, r, model);
    REQUIRE(c2.padded_vocab_size == c1.padded_vocab_size);
    const ParamLayout l2 = build_param_layout(c2);
    REQUIRE(l2.tensors.size() == l1.tensors.size());
    for (const auto& t : l2.tensors) {
      std::vector<float> v(t.numel);
      init_param_values(t, c2.seed, v.data());
      auto& cov = covered[t.name];
      cov.resize(full[t.name].size());
      for (std::size_t i = 0; i < t.numel; ++i) {
        const int64_t g = local_to_global_index(t, int64_t(i));
        REQUIRE(v[i] == full[t.name][g]);
        ++cov[g];
      }
    }
  }
  for (const auto& t : l1.tensors) {
    const int expect =
        build_param_layout(tiny(2, 0, model)).at(t.name).sharded() ? 1 : 2;  // sharded: once; replicated: per rank
    for (int n : covered[t.name]) REQUIRE(n == expect);
  }
}

}  // namespace

// MoE layers with expert tensor parallelism: each rank holds its share of every expert's ffn width (fc1 rows
// of both SwiGLU halves, fc2 columns), a slice along dim 1 or 2 of the stacked (E, out, in) tensors.
void moe_split_experts(StageConfig& c) {
  c.add_bias_linear = false;
  c.moe.num_experts = 4;
  c.moe.topk = 2;
  c.etp_size = c.tp_size;
  c.etp_rank = c.tp_rank;
}

TEST_CASE("param init: TP=2 slices reassemble to the TP=1 tensors bitwise") {
  check_tp_slices_reassemble(nullptr);
  SECTION("with MoE layers and the experts split over TP (ETP 2)") {
    check_tp_slices_reassemble(moe_split_experts);
    const StageConfig c = tiny(2, 1, moe_split_experts);
    const ParamLayout layout = build_param_layout(c);
    const ParamTensor& fc1 = layout.at("decoder.layers.0.mlp.experts.linear_fc1.weight");
    REQUIRE(fc1.global_shape == std::vector<int64_t>{4, 96, 32});
    REQUIRE(fc1.local_shape == std::vector<int64_t>{4, 48, 32});
    REQUIRE(fc1.blocks.size() == 2);
    REQUIRE(fc1.blocks[1].global_offset == 48 + 24);
  }
  SECTION("with --init-method-xavier-uniform and --embedding-init-method-std") {
    check_tp_slices_reassemble(xavier_and_embedding_std);
  }
}

namespace {

// Mean and standard deviation of tensor t's init (seed 7).
std::pair<double, double> init_moments(const ParamTensor& t) {
  std::vector<float> v(t.numel);
  init_param_values(t, 7, v.data());
  double s = 0, s2 = 0;
  for (float x : v) s += x, s2 += double(x) * x;
  const double mean = s / v.size();
  return {mean, std::sqrt(s2 / v.size() - mean * mean)};
}

}  // namespace

TEST_CASE("param init: --init-method-xavier-uniform and --embedding-init-method-std as Megatron chooses them") {
  const char* qkv = "decoder.layers.0.self_attention.linear_qkv.weight";
  const char* fc2 = "decoder.layers.1.mlp.linear_fc2.weight";
  const char* wte = "embedding.word_embeddings.weight";
  SECTION("xavier: every weight matrix, the scaled ones and the embeddings included, U(-a, a) of its fans") {
    const ParamLayout l = build_param_layout(tiny(1, 0, [](StageConfig& c) { c.init_method_xavier_uniform = true; }));
    for (const auto& t : l.tensors) {
      if (t.global_shape.size() < 2) continue;
      INFO(t.name);
      REQUIRE(t.init == InitKind::Uniform);
      const double fans = double(t.global_shape[0] + t.global_shape[1]);
      REQUIRE(t.init_bound == Approx(std::sqrt(6.0 / fans)));
      std::vector<float> v(t.numel);
      init_param_values(t, 7, v.data());
      for (float x : v) REQUIRE(std::abs(x) <= t.init_bound);
      const auto [mean, sd] = init_moments(t);
      REQUIRE(std::abs(mean) < 3 * t.init_bound / std::sqrt(3.0 * v.size()));
      REQUIRE(sd == Approx(t.init_bound / std::sqrt(3.0)).epsilon(0.08));  // U(-a, a): a / sqrt 3
    }
    REQUIRE(l.at(fc2).init_bound == Approx(std::sqrt(6.0 / (32 + 48))));  // no 1 / sqrt(2 L) scaling
  }
  SECTION("a separate embedding std: N(0, std) for the tables only, still weight-decayed (Megatron's code)") {
    const ParamLayout l = build_param_layout(tiny(1, 0, xavier_and_embedding_std));
    for (const char* name : {wte, "output_layer.weight", qkv}) REQUIRE(l.at(name).decay);
    REQUIRE(l.at(wte).init == InitKind::Normal);
    REQUIRE(l.at(wte).init_std == 0.5f);
    REQUIRE(init_moments(l.at(wte)).second == Approx(0.5).epsilon(0.08));
    REQUIRE(l.at("output_layer.weight").init == InitKind::Uniform);  // the output layer takes init_method
    REQUIRE(l.at(qkv).init == InitKind::Uniform);
    const ParamLayout normal =
        build_param_layout(tiny(1, 0, [](StageConfig& c) { c.embedding_init_method_std = 0.5f; }));
    REQUIRE(normal.at(wte).init_std == 0.5f);
    REQUIRE(normal.at(qkv).init == InitKind::Normal);
    REQUIRE(normal.at(qkv).init_std == 0.02f);
    REQUIRE(normal.at(fc2).init_std == Approx(0.02 / std::sqrt(4.0)));
  }
  SECTION("an embedding std equal to --init-method-std keeps the embeddings on init_method (Xavier)") {
    const ParamLayout l = build_param_layout(tiny(1, 0, [](StageConfig& c) {
      c.init_method_xavier_uniform = true;
      c.embedding_init_method_std = c.init_method_std;
    }));
    REQUIRE(l.at(wte).init == InitKind::Uniform);
  }
}

TEST_CASE("param init: normal statistics and Megatron scaling") {
  StageConfig c = tiny(1, 0);
  const ParamLayout l = build_param_layout(c);
  for (const char* name : {"embedding.word_embeddings.weight", "decoder.layers.0.mlp.linear_fc2.weight"}) {
    const ParamTensor& t = l.at(name);
    std::vector<float> v(t.numel);
    init_param_values(t, 7, v.data());
    double s = 0, s2 = 0;
    for (float x : v) s += x, s2 += double(x) * x;
    const double mean = s / v.size(), sd = std::sqrt(s2 / v.size() - mean * mean);
    REQUIRE(std::abs(mean) < 3 * t.init_std / std::sqrt(double(v.size())) + 1e-6);
    REQUIRE(sd == Approx(t.init_std).epsilon(0.08));
  }
  std::vector<float> a(10), b(10);
  ParamTensor t = l.at("decoder.layers.0.self_attention.linear_qkv.weight");
  t.numel = 10;
  init_param_values(t, 1, a.data());
  init_param_values(t, 2, b.data());
  REQUIRE(a != b);  // the seed matters
  REQUIRE(l.at("decoder.layers.0.input_layernorm.weight").init == InitKind::Ones);
}

namespace {

// Every element of every tensor lies in exactly one run, which maps it to local_to_global_index under its
// tensor's key.
void check_rounding_runs(const ParamLayout& l) {
  const std::vector<RoundingRun> runs = stochastic_rounding_runs(l);
  std::size_t covered = 0;
  for (const RoundingRun& r : runs) covered += r.hi - r.lo;
  REQUIRE(covered == l.total);
  for (const ParamTensor& t : l.tensors)
    for (std::size_t i = 0; i < t.numel; ++i) {
      const std::size_t at = t.offset + i;
      const auto r =
          std::find_if(runs.begin(), runs.end(), [&](const RoundingRun& x) { return x.lo <= at && at < x.hi; });
      REQUIRE(r != runs.end());
      REQUIRE(r->tensor_key == rounding_tensor_key(t.name));
      REQUIRE(int64_t(sr_global_index(at - r->lo, r->base, r->chunk_local, r->chunk_global)) ==
              local_to_global_index(t, int64_t(i)));
    }
}

}  // namespace

TEST_CASE("stochastic rounding runs: each element's global index under its tensor's key, at TP 1 and 2") {
  check_rounding_runs(build_param_layout(tiny(1, 0)));
  for (int r = 0; r < 2; ++r) check_rounding_runs(build_param_layout(tiny(2, r)));
  // Two blocks of an inner dimension: (3, 10, 4) holding columns [2, 4) and [7, 10) of dim 1.
  ParamLayout l;
  ParamTensor t;
  t.name = "synthetic";
  t.global_shape = {3, 10, 4};
  t.local_shape = {3, 5, 4};
  t.blocks = {{1, 2, 2}, {1, 7, 3}};
  t.offset = 0;
  t.numel = 60;
  l.tensors = {t};
  l.total = 60;
  check_rounding_runs(l);
}
