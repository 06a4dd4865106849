// Loader: Megatron's sampler order across data-parallel ranks, resume from consumed samples, masks and
// positions as get_ltor_masks_and_position_ids, and the per-split sample counts.
#include <catch2/catch.hpp>

#include <random>
#include <set>

#include "core/common/error.h"
#include "data/gpt_dataset/gpt_dataset.h"
#include "data/loader/gpt_data.h"
#include "memory_token_source.h"

using namespace gptrain;

namespace {

std::shared_ptr<const SampleDataset> small_dataset(int64_t num_samples, uint32_t seed) {
  std::mt19937 g(11);
  std::vector<int32_t> lens(80);
  for (auto& l : lens) l = 1 + static_cast<int32_t>(g() % 50);
  GPTIndexParams p;
  p.seq_length = 12;
  p.num_samples = num_samples;
  p.seed = seed;
  auto src = std::make_shared<test::MemoryTokenSource>(lens);
  return std::make_shared<GPTDataset>(src, SplitKind::train, SeqRange{0, 80}, p, build_gpt_index(lens, {0, 80}, p));
}

// Megatron's MegatronPretrainingSampler, transcribed as a generator of per-rank index lists.
std::vector<std::vector<int64_t>> megatron_sampler(int64_t total, int64_t consumed, int mbs, int dp, int rank) {
  std::vector<std::vector<int64_t>> out;
  std::vector<int64_t> batch;
  for (int64_t idx = consumed; idx < total; ++idx) {
    batch.push_back(idx);
    if (static_cast<int>(batch.size()) == mbs * dp) {
      out.emplace_back(batch.begin() + rank * mbs, batch.begin() + (rank + 1) * mbs);
      batch.clear();
    }
  }
  return out;
}

}  // namespace

TEST_CASE("loader follows Megatron's sampler for every data-parallel rank") {
  auto ds = small_dataset(400, 3);
  const int mbs = 2, dp = 3, gbs = 12;
  for (int rank = 0; rank < dp; ++rank) {
    GPTBatchLoader loader(ds, {mbs, gbs, rank, dp}, {});
    REQUIRE(loader.num_micro_batches() == 2);
    const int64_t start = 24;  // resumed after two steps
    auto want = megatron_sampler(ds->size(), start, mbs, dp, rank);
    size_t j = 0;
    for (int64_t consumed = start; consumed + gbs <= 300; consumed += gbs)
      for (int k = 0; k < loader.num_micro_batches(); ++k) REQUIRE(loader.sample_ids(consumed, k) == want[j++]);
  }
  // One global batch covers [consumed, consumed + gbs) exactly once over ranks and micro-batches.
  std::multiset<int64_t> seen;
  for (int rank = 0; rank < dp; ++rank) {
    GPTBatchLoader loader(ds, {mbs, gbs, rank, dp}, {});
    for (int k = 0; k < 2; ++k)
      for (int64_t id : loader.sample_ids(36, k)) seen.insert(id);
  }
  CHECK(seen.size() == 12);
  CHECK((*seen.begin() == 36 && *seen.rbegin() == 47 && std::set<int64_t>(seen.begin(), seen.end()).size() == 12));
}

TEST_CASE("resuming mid-epoch from consumed samples reproduces the batches") {
  // A "restarted" run rebuilds the dataset from scratch; the batches from step 5 on must be identical.
  auto a = small_dataset(300, 1234);
  auto b = small_dataset(300, 1234);
  GPTBatchLoader la(a, {4, 8, 1, 2}, {}), lb(b, {4, 8, 1, 2}, {});
  for (int64_t step = 5; step < 12; ++step) {
    for (int k = 0; k < 1; ++k) {
      auto x = la.micro_batch(step * 8, k), y = lb.micro_batch(step * 8, k);
      REQUIRE(x.tokens == y.tokens);
      REQUIRE(x.labels == y.labels);
      REQUIRE(x.sample_ids == y.sample_ids);
    }
  }
  // Labels are the tokens shifted by one inside each sample window.
  auto mb = la.micro_batch(40, 0);
  std::vector<int32_t> w(13);
  a->read_sample(mb.sample_ids[2], w);
  for (int t = 0; t < 12; ++t) {
    CHECK(mb.tokens[2 * 12 + t] == w[t]);
    CHECK(mb.labels[2 * 12 + t] == w[t + 1]);
  }
  // A different seed gives a different order.
  auto c = small_dataset(300, 1235);
  GPTBatchLoader lc(c, {4, 8, 1, 2}, {});
  CHECK(lc.micro_batch(40, 0).tokens != mb.tokens);
  // Running past the end is an error, not a silent wrap.
  CHECK_THROWS_AS(la.micro_batch(a->size() - 2, 0), Error);
  CHECK_THROWS_AS(GPTBatchLoader(a, {4, 12, 0, 2}, {}), Error);  // gbs not a multiple of mbs*dp
}

TEST_CASE("masks and positions match get_ltor_masks_and_position_ids") {
  const int32_t E = 50256;
  const int32_t window[7] = {5, E, 7, 8, E, 9, 4};
  int32_t tok[6], lab[6], pos[6], seg[6];
  float mask[6];
  fill_row(window, 6, {E, false, false, false}, tok, lab, pos, seg, mask);
  CHECK((std::vector<int32_t>(tok, tok + 6) == std::vector<int32_t>{5, E, 7, 8, E, 9}));
  CHECK((std::vector<int32_t>(lab, lab + 6) == std::vector<int32_t>{E, 7, 8, E, 9, 4}));
  CHECK((std::vector<int32_t>(pos, pos + 6) == std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  CHECK((std::vector<int32_t>(seg, seg + 6) == std::vector<int32_t>{0, 0, 0, 0, 0, 0}));
  CHECK((std::vector<float>(mask, mask + 6) == std::vector<float>{1, 1, 1, 1, 1, 1}));
  fill_row(window, 6, {E, true, true, true}, tok, lab, pos, seg, mask);
  // Megatron: positions after an EOD restart at 0; the EOD belongs to the document it ends.
  CHECK((std::vector<int32_t>(pos, pos + 6) == std::vector<int32_t>{0, 1, 0, 1, 2, 0}));
  CHECK((std::vector<int32_t>(seg, seg + 6) == std::vector<int32_t>{0, 0, 1, 1, 1, 2}));
  CHECK((std::vector<float>(mask, mask + 6) == std::vector<float>{1, 0, 1, 1, 0, 1}));
  fill_row(window, 6, {E, false, true, false}, tok, lab, pos, seg, mask);
  CHECK((std::vector<int32_t>(seg, seg + 6) == std::vector<int32_t>{0, 0, 0, 0, 0, 0}));
  CHECK((std::vector<float>(mask, mask + 6) == std::vector<float>{1, 1, 1, 1, 1, 1}));
}
