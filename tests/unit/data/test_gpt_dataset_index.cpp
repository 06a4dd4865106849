// GPT sample index: numpy RandomState parity (expected values printed by numpy 1.24), split rounding,
// epoch planning (hand-computed), and structural properties of the index on small files.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/common/error.h"
#include "../core/error_text.h"
#include "data/gpt_dataset/gpt_dataset.h"
#include "data/gpt_dataset/numpy_random_state.h"
#include "memory_token_source.h"

using namespace gptrain;

TEST_CASE("numpy RandomState shuffle matches numpy") {
  {
    NumpyRandomState r(1234);
    std::vector<int> a(10);
    std::iota(a.begin(), a.end(), 0);
    r.shuffle(a.data(), 10);
    CHECK(a == std::vector<int>{7, 2, 9, 1, 0, 8, 4, 5, 6, 3});
    CHECK(r.next32() == 646980841u);  // np: r.randint(0, 2**32, dtype=np.uint64) after the shuffle
  }
  {
    NumpyRandomState r(0);
    std::vector<int64_t> a(1000);
    std::iota(a.begin(), a.end(), 0);
    r.shuffle(a.data(), 1000);
    CHECK(std::vector<int64_t>(a.begin(), a.begin() + 8) ==
          std::vector<int64_t>{993, 859, 298, 553, 672, 971, 27, 231});
  }
  {
    NumpyRandomState r(4294967295u);
    std::vector<uint32_t> a(37);
    std::iota(a.begin(), a.end(), 0u);
    r.shuffle(a.data(), 37);
    CHECK(a == std::vector<uint32_t>{15, 2, 23, 20, 17, 31, 21, 24, 3,  30, 16, 1,  6,  8, 33, 28, 4,  36, 19,
                                     9,  5, 14, 13, 10, 29, 11, 18, 27, 32, 25, 26, 22, 0, 7,  12, 34, 35});
  }
  {
    // 64-bit bounded draws: np.random.RandomState(7).randint(0, 2**40 + 5, dtype=np.uint64)
    NumpyRandomState r(7);
    CHECK(r.bounded((1ULL << 40) + 4) == 752595690692ULL);
    CHECK(r.bounded((1ULL << 40) + 4) == 108744157686ULL);
    CHECK(r.bounded((1ULL << 40) + 4) == 291964244179ULL);
  }
}

TEST_CASE("split string parsing and ranges follow Megatron") {
  auto w = parse_split("969, 30, 1");
  auto r = split_ranges(w, 1000);
  REQUIRE(r[0]);
  REQUIRE(r[1]);
  REQUIRE(r[2]);
  CHECK((r[0]->begin == 0 && r[0]->end == 969));
  CHECK((r[1]->begin == 969 && r[1]->end == 999));
  CHECK((r[2]->begin == 999 && r[2]->end == 1000));

  r = split_ranges(parse_split("99,1"), 1000);
  CHECK(!r[2]);
  CHECK((r[0]->end == 990 && r[1]->begin == 990 && r[1]->end == 1000));

  // 0.5 * 5 = 2.5 rounds half to even -> 2 (std::round would give 3).
  r = split_ranges(parse_split("1 1"), 5);
  CHECK((r[0]->end == 2 && r[1]->begin == 2 && r[1]->end == 5));
  // 0.5 * 7 = 3.5 -> 4.
  r = split_ranges(parse_split("50,50,0"), 7);
  CHECK((r[0]->end == 4 && !r[2]));

  CHECK_THROWS_AS(parse_split("a,b"), Error);
  CHECK_THROWS_AS(parse_split("1,2,3,4"), Error);
  CHECK_THROWS_AS(parse_split("0,0,0"), Error);
  // Megatron's scan would read these as 1,50,50 and 1,1,0; the stray characters are refused instead.
  for (const char* bad : {"-1,50,50", "nan,1,1", "inf,1,1", "1e3,1,1", "+1,1,1"}) {
    INFO(bad);
    const std::string e = test::error_text([&] { parse_split(bad); });
    CHECK(e.find("--split '" + std::string(bad) + "': unexpected") != std::string::npos);
  }
  w = parse_split("'98, 2,0'");  // quotes left by a shell script, and other separators, pass
  CHECK(w[0] == 0.98);
  CHECK(parse_split("98/2/0")[1] == 0.02);
}

TEST_CASE("epoch plan and the separate final epoch rule") {
  std::vector<int32_t> lens(10, 10);  // T = 100 tokens
  GPTIndexParams p;
  p.seq_length = 10;
  p.num_samples = 9;  // 9*10+1 = 91 <= 100: one epoch
  auto plan = plan_gpt_epochs(lens, {0, 10}, p);
  CHECK(plan.num_epochs == 1);
  CHECK(plan.num_samples == 9);  // (100 - 1) // 10
  CHECK(!plan.separate_final_epoch);

  p.num_samples = 15;  // 151 tokens -> 2 epochs; 9 from the first, 6 < int(0.8*9)=7 from the last
  plan = plan_gpt_epochs(lens, {0, 10}, p);
  CHECK(plan.num_epochs == 2);
  CHECK(plan.separate_final_epoch);
  CHECK(plan.samples_sans_final_epoch == 9);
  CHECK(plan.num_samples == 19);

  p.num_samples = 17;  // 8 from the last epoch >= 7: merged
  plan = plan_gpt_epochs(lens, {0, 10}, p);
  CHECK(plan.num_epochs == 2);
  CHECK(!plan.separate_final_epoch);

  p.num_samples = 3;
  CHECK_THROWS_AS(plan_gpt_epochs(lens, {4, 4}, p), Error);  // empty split asked for samples
}

namespace {

// Windows before shuffling must tile the document stream: each starts on the previous one's last token.
void check_index_tiles_documents(const std::vector<int32_t>& lens, SeqRange range, const GPTIndexParams& p) {
  auto src = std::make_shared<test::MemoryTokenSource>(lens);
  GPTIndex idx = build_gpt_index(lens, range, p);
  const int64_t n = idx.plan.num_samples;
  REQUIRE(idx.shuffle_index.size() == n);
  REQUIRE(idx.sample_index.size() == 2 * (n + 1));
  REQUIRE(idx.document_index.size() == idx.plan.num_epochs * range.size());
  if (p.num_samples) CHECK(n >= *p.num_samples);

  // document_index: each epoch block is a permutation of the range.
  std::vector<int32_t> docs(idx.document_index.begin(), idx.document_index.end());
  std::vector<int32_t> counts(lens.size(), 0);
  for (int32_t d : docs) counts[d]++;
  for (int64_t d = range.begin; d < range.end; ++d) CHECK(counts[d] == idx.plan.num_epochs);
  if (idx.plan.separate_final_epoch) {
    std::vector<int32_t> last(docs.end() - range.size(), docs.end());
    std::sort(last.begin(), last.end());
    for (int64_t i = 0; i < range.size(); ++i) CHECK(last[i] == range.begin + i);
  }

  // shuffle_index: a permutation of [0, n), split at samples_sans_final_epoch when separate.
  std::vector<int64_t> sh(idx.shuffle_index.begin(), idx.shuffle_index.end());
  const int64_t cut = idx.plan.separate_final_epoch ? idx.plan.samples_sans_final_epoch : n;
  for (int64_t i = 0; i < n; ++i) CHECK(((i < cut) ? (sh[i] < cut) : (sh[i] >= cut)));
  std::sort(sh.begin(), sh.end());
  for (int64_t i = 0; i < n; ++i) REQUIRE(sh[i] == i);

  // Stream of tokens in document_index order; window k = stream[k*S, k*S + S + 1).
  std::vector<int32_t> stream;
  for (int32_t d : docs)
    for (int32_t t = 0; t < lens[d]; ++t) stream.push_back(1000 * d + t);
  GPTDataset ds(src, SplitKind::train, range, p, idx);
  std::vector<int32_t> w(p.seq_length + 1);
  for (int64_t i = 0; i < n; ++i) {
    ds.read_sample(i, w);
    const int64_t k = idx.shuffle_index[i];
    for (int64_t t = 0; t <= p.seq_length; ++t) REQUIRE(w[t] == stream[k * p.seq_length + t]);
  }
}

}  // namespace

TEST_CASE("index windows tile the shuffled document stream") {
  std::mt19937 g(5);
  std::vector<int32_t> lens(60);
  for (auto& l : lens) l = static_cast<int32_t>(g() % 40);  // zero-length sequences included
  GPTIndexParams p;
  p.seq_length = 16;
  p.seed = 99;
  SECTION("one epoch, no size") { check_index_tiles_documents(lens, {5, 50}, p); }
  SECTION("one epoch") {
    p.num_samples = 20;
    check_index_tiles_documents(lens, {5, 50}, p);
  }
  SECTION("several epochs, merged and separate final epoch") {
    for (int64_t ns : {150, 170, 190, 260, 301}) {
      p.num_samples = ns;
      check_index_tiles_documents(lens, {0, 60}, p);
    }
    p.num_samples = 150;
    CHECK(plan_gpt_epochs(lens, {0, 60}, p).num_epochs > 1);
  }
}
