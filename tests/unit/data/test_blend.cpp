// Blending: --data-path parsing, numpy-exact normalization, Megatron's greedy blend order and sizes.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <utility>

#include "core/common/error.h"
#include "../core/error_text.h"
#include "data/blend/blend.h"
#include "data/blend/blended_dataset.h"
#include "data/gpt_dataset/gpt_dataset.h"
#include "memory_token_source.h"

using namespace gptrain;

TEST_CASE("data path parsing: prefixes or weight prefix pairs") {
  auto s = parse_blend({"a"}, "--data-path");
  CHECK((s.prefixes == std::vector<std::string>{"a"} && !s.weights));
  s = parse_blend({"0.3", "a", "0.7", "b"}, "--data-path");
  CHECK((s.prefixes == std::vector<std::string>{"a", "b"}));
  REQUIRE(s.weights);
  CHECK((*s.weights == std::vector<double>{0.3, 0.7}));
  s = parse_blend({"a", "b"}, "--data-path");  // even count, 'a' is no number: all prefixes
  CHECK((s.prefixes == std::vector<std::string>{"a", "b"} && !s.weights));
  s = parse_blend({"a", "b", "c"}, "--data-path");
  CHECK(s.prefixes.size() == 3);
  CHECK_THROWS_AS(parse_blend({"-1", "a", "2", "b"}, "--data-path"), Error);
  CHECK_THROWS_AS(parse_blend({}, "--data-path"), Error);
}

TEST_CASE("blend weights are read with Python's float(): no hex, and a mix of numbers and names is refused") {
  // Expected values from CPython's float().
  const std::vector<std::pair<std::string, double>> ok = {
      {"1_000", 1000.0}, {".5", 0.5},        {"5.", 5.0}, {"1e3", 1000.0},
      {" 2.5 ", 2.5},    {"1.5e-3", 0.0015}, {"+3", 3.0}, {"1_0.2_5e1_0", 102500000000.0}};
  for (const auto& [text, value] : ok) {
    INFO(text);
    REQUIRE(parse_python_float(text) == value);
  }
  for (const char* text : {"0x10", "0x1p3", "1__0", "_1", "1_", ".", "1e", "e3", "1,5", ""}) {
    INFO(text);
    REQUIRE(!parse_python_float(text).has_value());
  }
  REQUIRE(std::isinf(*parse_python_float("-Infinity")));
  REQUIRE(std::isnan(*parse_python_float("nan")));
  // "0x10 a": no weight is a Python float, so both are prefixes (Megatron's rule), never weight 16.
  auto s = parse_blend({"0x10", "a"}, "--data-path");
  CHECK((s.prefixes == std::vector<std::string>{"0x10", "a"} && !s.weights));
  const std::string mixed = test::error_text([] { parse_blend({"0.5", "a", "0x10", "b"}, "--data-path"); });
  CHECK(mixed.find("'0x10' (before b) is not a number") != std::string::npos);
  CHECK(test::error_text([] {
          parse_blend({"nan", "a", "1", "b"}, "--data-path");
        }).find("positive") != std::string::npos);
  CHECK(test::error_text([] {
          parse_blend({"inf", "a", "1", "b"}, "--data-path");
        }).find("positive") != std::string::npos);
}

TEST_CASE("weights are normalized with numpy's pairwise sum") {
  // numpy 1.24: np.sum(w).hex() == '0x1.588c49ba5e353p+6'; a left-to-right sum gives ...355p+6.
  const std::vector<double> w = {5.508, 7.081, 2.909, 5.108, 8.929, 8.963, 1.256, 2.072, 0.515, 4.408,
                                 0.299, 4.568, 6.491, 2.785, 6.763, 5.909, 0.24,  5.589, 2.593, 4.151};
  CHECK(numpy_sum(w) == 0x1.588c49ba5e353p+6);
  const auto n = normalize_weights(w);
  CHECK(n[0] == 5.508 / 0x1.588c49ba5e353p+6);
}

TEST_CASE("blend sizes and order follow Megatron's helpers") {
  // Megatron's own unit test: weights 0.25/0.75, 8 samples -> 2 and 6, each in order.
  auto b = build_blending_index({0.25, 0.75}, 8);
  std::vector<int> counts(2, 0);
  for (size_t s = 0; s < 8; ++s) {
    CHECK(b.dataset_sample_index[s] == counts[b.dataset_index[s]]);
    counts[b.dataset_index[s]]++;
  }
  CHECK((counts == std::vector<int>{2, 6}));
  // Hand-run of the greedy rule: s=0 (x=1): errors .25/.75 -> 1; s=1 (x=1): .25/-.25 -> 0; s=2 (x=2):
  // -.5/.5 -> 1; s=3 (x=3): -.25/.25 -> 1; s=4 (x=4): 0/0 -> tie, lowest -> 0.
  CHECK((std::vector<int16_t>(b.dataset_index.begin(), b.dataset_index.begin() + 5) ==
         std::vector<int16_t>{1, 0, 1, 1, 0}));

  b = build_exhaustive_blending_index({3, 5});
  counts = {0, 0};
  for (auto d : b.dataset_index) counts[d]++;
  CHECK((counts == std::vector<int>{3, 5}));

  // Targets ceil(size * w) can add up to more than size (8 -> 9), the buffer adds the 0.5% surplus.
  const auto w = normalize_weights({1, 1, 1});
  const auto t = samples_per_dataset(w, 8, 0.0);
  CHECK(t[0] + t[1] + t[2] == 9);
  CHECK(samples_per_dataset({0.5, 0.5}, 1000, 0.005) == std::vector<int64_t>{503, 503});
}

TEST_CASE("a blend that oversamples a dataset is an error") {
  std::vector<int32_t> lens(20, 10);
  auto src = std::make_shared<test::MemoryTokenSource>(lens);
  GPTIndexParams p;
  p.seq_length = 8;
  p.num_samples = 5;
  auto idx = build_gpt_index(lens, {0, 20}, p);
  const int64_t n = idx.plan.num_samples;
  std::vector<std::shared_ptr<const SampleDataset>> ds = {
      std::make_shared<GPTDataset>(src, SplitKind::train, SeqRange{0, 20}, p, idx)};
  std::vector<int16_t> di(static_cast<size_t>(n + 1), 0);
  std::vector<int64_t> si(static_cast<size_t>(n + 1));
  for (int64_t i = 0; i <= n; ++i) si[i] = i;
  CHECK_THROWS_WITH(
      BlendedDataset(ds, ArrayView<int16_t>::owning(std::move(di)), ArrayView<int64_t>::owning(std::move(si)), "t"),
      Catch::Contains("oversamples"));
}
