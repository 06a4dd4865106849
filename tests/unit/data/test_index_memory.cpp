// The sample index's memory, known from the epoch plan: equal to what build_gpt_index allocates, and a
// request beyond the available memory refused up front with the bytes it needs.
#include <catch2/catch.hpp>

#include <random>
#include <vector>

#include "../core/error_text.h"
#include "core/common/error.h"
#include "data/gpt_dataset/gpt_index.h"
#include "data/gpt_dataset/index_memory.h"

using namespace gptrain;

TEST_CASE("index memory: the planned bytes are the built arrays' bytes") {
  std::mt19937 g(3);
  std::vector<int32_t> lens(97);
  for (auto& l : lens) l = static_cast<int32_t>(g() % 60);
  for (std::optional<int64_t> n : {std::optional<int64_t>{}, std::optional<int64_t>{1}, std::optional<int64_t>{500},
                                   std::optional<int64_t>{4321}}) {
    for (SeqRange r : {SeqRange{0, 97}, SeqRange{10, 60}}) {
      GPTIndexParams p;
      p.seq_length = 16;
      p.num_samples = n;
      const GPTEpochPlan plan = plan_gpt_epochs(lens, r, p);
      const GPTIndex idx = build_gpt_index(lens, r, p);
      const uint64_t built = idx.document_index.size() * 4 + idx.sample_index.size() * 8 + idx.shuffle_index.size() * 8;
      INFO("samples " << n.value_or(-1) << ", range [" << r.begin << ", " << r.end << ")");
      REQUIRE(gpt_index_bytes(plan, r) == built);
    }
  }
  REQUIRE(blend_index_bytes(1000) == 10000);
}

TEST_CASE("index memory: a request beyond the available memory is refused with the bytes it needs") {
  // 1e11 samples of 1024 tokens from a 1656-token split: ~6e10 epochs, terabytes of index.
  std::vector<int32_t> lens(45, 36);
  lens[0] = 36 + 16;
  GPTIndexParams p;
  p.seq_length = 1024;
  p.num_samples = 100000000000;
  const GPTEpochPlan plan = plan_gpt_epochs(lens, {0, 45}, p);
  const uint64_t bytes = gpt_index_bytes(plan, {0, 45});
  REQUIRE(bytes > (uint64_t(1) << 40));
  const AvailableMemory eight{uint64_t(8) << 30, "left under the address-space limit (ulimit -v)"};
  const std::string e =
      test::error_text([&] { check_index_memory("GPTDataset d train", bytes, eight, index_shrink_flags(0)); });
  REQUIRE(e.find("GPTDataset d train: the sample index needs " + describe_bytes(bytes)) != std::string::npos);
  REQUIRE(e.find("more than the 8.00 GiB (8589934592 bytes) left under the address-space limit (ulimit -v)") !=
          std::string::npos);
  REQUIRE(e.find("ask for fewer samples (--train-samples / --train-iters)") != std::string::npos);
  REQUIRE(test::error_text([&] { check_index_memory("x", 100, AvailableMemory{100, ""}, ""); }).empty());
  REQUIRE(test::error_text([&] { check_index_memory("x", bytes, std::nullopt, ""); }).empty());  // unknown: no check
  REQUIRE(describe_bytes(512) == "512 bytes");
  REQUIRE(describe_bytes(1536) == "1.50 KiB (1536 bytes)");
  // Counts whose token total overflows 64 bits are refused rather than wrapped.
  p.num_samples = int64_t(1) << 62;
  REQUIRE(test::error_text([&] {
            plan_gpt_epochs(lens, {0, 45}, p);
          }).find("more tokens than a 64-bit count holds") != std::string::npos);
  // This process: something is known (MemAvailable at least), and it names its limit.
  const std::optional<AvailableMemory> here = available_memory();
  REQUIRE(here.has_value());
  REQUIRE(!here->limit.empty());
}
