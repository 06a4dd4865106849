// Gradient buckets (parallel/data_parallel/grad_buckets.h) and the model's seams they rely on: buckets cover each
// region of the flat layout exactly, in backward order, each ready at the latest part that finishes
// one of its tensors; a part's gradients reported done by backward do not change afterwards; a
// forward part reads no parameter outside its param_reads (the parameter all-gather overlap).
#include "core/model/gpt_stage.h"
#include "core/model/stage_activations.h"
#include "kernels/backend.h"
#include "parallel/data_parallel/grad_buckets.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using namespace gptrain;
using namespace gptrain::parallel;

namespace {

StageConfig tiny(bool llama, int first, int last, bool embedding, bool head) {
  StageConfig c;
  c.num_layers = 4;
  c.hidden_size = 16;
  c.num_attention_heads = 2;
  c.ffn_hidden_size = 32;
  c.seq_length = 8;
  c.max_position_embeddings = 8;
  c.vocab_size = 100;
  c.micro_batch_size = 2;
  c.hidden_dropout = 0.0f;
  c.attention_dropout = 0.0f;
  if (llama) {
    c.normalization = Normalization::RMSNorm;
    c.position_embedding = PositionEmbedding::Rope;
    c.swiglu = true;
    c.add_bias_linear = false;
    c.untie_embeddings_and_output_weights = true;
  }
  c.layer_first = first;
  c.layer_last = last;
  c.has_embedding = embedding;
  c.has_head = head;
  c.finalize(16);
  return c;
}

std::vector<int> group_of(const GptStage& st) {
  std::vector<int> g(st.layout().tensors.size(), -1);
  for (std::size_t k = 0; k < st.grad_groups().size(); ++k)
    for (int t : st.grad_groups()[k]) g[t] = int(k);
  return g;
}

}  // namespace

TEST_CASE("grad groups: every tensor once, tied word embeddings with the embedding part", "[grad_buckets]") {
  auto be = make_backend("cpu", DType::F32);
  GptStage whole(tiny(false, 0, 4, true, true), *be);
  const std::vector<int> g = group_of(whole);
  REQUIRE(whole.grad_groups().size() == 6);  // head, 4 layers, embedding
  for (int x : g) REQUIRE(x >= 0);
  const auto& ts = whole.layout().tensors;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (ts[i].name.rfind("embedding.", 0) == 0) REQUIRE(g[i] == 5);
    if (ts[i].name.rfind("decoder.final_layernorm", 0) == 0) REQUIRE(g[i] == 0);
    if (ts[i].name.rfind("decoder.layers.3.", 0) == 0) REQUIRE(g[i] == 1);
    if (ts[i].name.rfind("decoder.layers.0.", 0) == 0) REQUIRE(g[i] == 4);
  }
  // A last pipeline stage holding the tied copy: it belongs to the head part.
  GptStage last(tiny(false, 2, 4, false, true), *be);
  const std::vector<int> gl = group_of(last);
  const auto& tl = last.layout().tensors;
  for (std::size_t i = 0; i < tl.size(); ++i)
    if (tl[i].name == "embedding.word_embeddings.weight") REQUIRE(gl[i] == 0);
}

TEST_CASE("grad buckets partition each layout region in backward order", "[grad_buckets]") {
  auto be = make_backend("cpu", DType::F32);
  for (bool llama : {false, true})
    for (auto [first, last, emb, head] : {std::tuple{0, 4, true, true}, std::tuple{0, 2, true, false},
                                          std::tuple{1, 3, false, false}, std::tuple{2, 4, false, true}}) {
      GptStage st(tiny(llama, first, last, emb, head), *be);
      const ParamLayout& L = st.layout();
      const std::vector<int> g = group_of(st);
      for (std::size_t elems : {std::size_t{1}, std::size_t{300}, std::size_t{2000}, std::size_t{1} << 40})
        for (int dp : {1, 2, 3}) {
          std::vector<bool> deferred(L.tensors.size(), false);
          deferred[0] = true;
          const std::vector<GradBucket> bs = plan_grad_buckets(L, st.grad_groups(), deferred, elems, dp);
          INFO("llama " << llama << " layers [" << first << ", " << last << ") bucket " << elems << " dp " << dp);
          // Launch order: ready groups never go back.
          for (std::size_t i = 1; i < bs.size(); ++i) REQUIRE(bs[i - 1].ready_group <= bs[i].ready_group);
          // Exact cover of [0, total), no bucket across the decay cut.
          std::vector<GradBucket> by_lo = bs;
          std::sort(by_lo.begin(), by_lo.end(), [](const auto& a, const auto& b) { return a.lo < b.lo; });
          std::size_t at = 0;
          for (const GradBucket& b : by_lo) {
            REQUIRE(b.lo == at);
            REQUIRE(b.hi > b.lo);
            REQUIRE((b.hi <= L.num_decay || b.lo >= L.num_decay));
            at = b.hi;
          }
          REQUIRE(at == L.total);
          std::size_t pad = 0, shard = 0;
          for (const GradBucket& b : bs) {
            // Whole tensors; ready at the latest of their parts; deferred when holding tensor 0.
            int latest = -1;
            bool holds_deferred = false;
            for (std::size_t t = 0; t < L.tensors.size(); ++t) {
              const std::size_t a = L.tensors[t].offset, e = a + L.tensors[t].numel;
              if (e <= b.lo || a >= b.hi) continue;
              REQUIRE((a >= b.lo && e <= b.hi));
              latest = std::max(latest, g[t]);
              holds_deferred = holds_deferred || t == 0;
            }
            REQUIRE(b.ready_group == latest);
            REQUIRE(b.deferred == holds_deferred);
            // Equal shards of the padded bucket, laid out back to back.
            REQUIRE(b.shard * dp >= b.size());
            REQUIRE(b.shard * dp < b.size() + dp);
            REQUIRE(b.pad_offset == pad);
            REQUIRE(b.shard_offset == shard);
            pad += b.shard * dp;
            shard += b.shard;
          }
          // Buckets close as soon as they reach the size: only a region's last (lowest) bucket may be
          // smaller, and a bucket holding two or more tensors was below the size before its last one.
          int small = 0;
          for (const GradBucket& b : bs) small += b.size() < elems ? 1 : 0;
          REQUIRE(small <= 2);
          if (elems == 1) {
            std::size_t nonempty = 0;
            for (const auto& t : L.tensors) nonempty += t.numel > 0 ? 1 : 0;
            REQUIRE(bs.size() == nonempty);  // one tensor per bucket
          }
          if (elems == (std::size_t{1} << 40)) REQUIRE(bs.size() == (L.num_decay < L.total ? 2u : 1u));
        }
    }
}

TEST_CASE("grad buckets keep expert and dense tensors apart, expert shards over EDP", "[grad_buckets]") {
  auto be = make_backend("cpu", DType::F32);
  GptStage st(tiny(true, 0, 4, true, true), *be);
  const ParamLayout& L = st.layout();
  // Any pattern of tensors marked expert (the layout need not have experts for the bucket maths).
  std::vector<bool> expert(L.tensors.size(), false);
  for (std::size_t t = 0; t < L.tensors.size(); t += 3) expert[t] = true;
  for (std::size_t elems : {std::size_t{1}, std::size_t{300}, std::size_t{1} << 40})
    for (auto [dp, edp] : {std::pair{2, 1}, std::pair{4, 2}, std::pair{3, 3}}) {
      INFO("bucket " << elems << " dp " << dp << " edp " << edp);
      const std::vector<GradBucket> bs = plan_grad_buckets(L, st.grad_groups(), {}, elems, dp, expert, edp);
      std::size_t covered = 0, pad = 0;
      for (const GradBucket& b : bs) {
        covered += b.size();
        for (std::size_t t = 0; t < L.tensors.size(); ++t) {
          const std::size_t a = L.tensors[t].offset, e = a + L.tensors[t].numel;
          if (e <= b.lo || a >= b.hi) continue;
          REQUIRE(expert[t] == b.expert);
        }
        const std::size_t d = std::size_t(b.expert ? edp : dp);
        REQUIRE(b.shard * d >= b.size());
        REQUIRE(b.shard * d < b.size() + d);
        REQUIRE(b.pad_offset == pad);
        pad += b.shard * d;
      }
      REQUIRE(covered == L.total);
    }
  REQUIRE_THROWS_WITH(plan_grad_buckets(L, st.grad_groups(), {}, 100, 4, expert, 3),
                      Catch::Contains("expert-data-parallel size 3 does not divide DP 4"));
}

TEST_CASE("grads-done callback: a part's gradients are final when backward reports it", "[grad_buckets]") {
  auto be = make_backend("cpu", DType::F32);
  for (bool llama : {false, true}) {
    const StageConfig c = tiny(llama, 0, 4, true, true);
    GptStage st(c, *be);
    st.init_parameters();
    std::mt19937 rng(5);
    HostMicroBatch mb;
    const int N = c.micro_batch_size * c.seq_length;
    for (int i = 0; i < N; ++i) {
      mb.tokens.push_back(int32_t(rng() % c.vocab_size));
      mb.labels.push_back(int32_t(rng() % c.vocab_size));
      mb.loss_mask.push_back(1.0f);
      mb.position_ids.push_back(i % c.seq_length);
    }
    auto acts = st.make_activations();
    const ParamLayout& L = st.layout();
    std::vector<int> reported;
    std::vector<std::vector<float>> snapshot(L.tensors.size());
    bool later_untouched = true;  // reported early enough: later parts' gradients still all zero
    st.set_grads_done_callback([&](int k) {
      reported.push_back(k);
      for (int t : st.grad_groups()[k])
        snapshot[t].assign(st.grads() + L.tensors[t].offset, st.grads() + L.tensors[t].offset + L.tensors[t].numel);
      for (std::size_t j = k + 1; j < st.grad_groups().size(); ++j)
        for (int t : st.grad_groups()[j]) {
          if (L.tensors[t].name == "embedding.word_embeddings.weight") continue;  // tied: the head wrote it
          for (std::size_t i = 0; i < L.tensors[t].numel; ++i)
            later_untouched = later_untouched && st.grads()[L.tensors[t].offset + i] == 0.0f;
        }
    });
    st.zero_grads();
    st.load_batch(*acts, mb);
    st.forward(*acts, nullptr, true);
    st.backward(*acts, nullptr, 1.0f / N);
    REQUIRE(reported.size() == st.grad_groups().size());
    REQUIRE(later_untouched);
    for (std::size_t k = 0; k < reported.size(); ++k) REQUIRE(reported[k] == int(k));
    bool nonzero = false;
    for (std::size_t t = 0; t < L.tensors.size(); ++t) {
      INFO(L.tensors[t].name);
      REQUIRE(snapshot[t].size() == L.tensors[t].numel);
      REQUIRE(std::memcmp(snapshot[t].data(), st.grads() + L.tensors[t].offset, L.tensors[t].numel * 4) == 0);
      for (float x : snapshot[t]) nonzero = nonzero || x != 0.0f;
    }
    REQUIRE(nonzero);
  }
}

TEST_CASE("params-needed callback: each forward part reads only what param_reads lists", "[grad_buckets]") {
  // Parameters start as NaN; the callback fills in exactly the tensors of the part about to run. The
  // loss must equal a plain forward's: a part reading anything not yet filled in gives NaN.
  auto be = make_backend("cpu", DType::F32);
  for (bool llama : {false, true})
    for (bool fused : {true, false}) {
      StageConfig c = tiny(llama, 0, 4, true, true);
      c.fused_ops = fused;
      GptStage st(c, *be);
      st.init_parameters();
      const ParamLayout& L = st.layout();
      float* params = static_cast<float*>(st.params());
      const std::vector<float> values(params, params + L.total);
      std::mt19937 rng(9);
      HostMicroBatch mb;
      const int N = c.micro_batch_size * c.seq_length;
      for (int i = 0; i < N; ++i) {
        mb.tokens.push_back(int32_t(rng() % c.vocab_size));
        mb.labels.push_back(int32_t(rng() % c.vocab_size));
        mb.loss_mask.push_back(1.0f);
        mb.position_ids.push_back(i % c.seq_length);
      }
      auto acts = st.make_activations();
      st.load_batch(*acts, mb);
      st.forward(*acts, nullptr, false);
      const double want = st.loss_sum(*acts).loss_sum;

      std::fill(params, params + L.total, std::numeric_limits<float>::quiet_NaN());
      std::vector<int> order;
      st.set_params_needed_callback([&](int k) {
        order.push_back(k);
        for (int t : st.param_reads()[k])
          std::copy_n(values.begin() + std::ptrdiff_t(L.tensors[t].offset), L.tensors[t].numel,
                      params + L.tensors[t].offset);
      });
      st.forward(*acts, nullptr, false);
      const double got = st.loss_sum(*acts).loss_sum;
      INFO("llama " << llama << " fused " << fused);
      REQUIRE(std::isfinite(want));
      REQUIRE(got == want);
      // Forward order: embedding part first, head part last.
      REQUIRE(order.size() == st.param_reads().size());
      for (std::size_t i = 0; i < order.size(); ++i) REQUIRE(order[i] == int(order.size() - 1 - i));
    }
}
