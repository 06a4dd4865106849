// Index cache across ranks: rank 0 builds and writes, the others wait at the barrier and map the files;
// every rank serves identical samples; an unwritable cache directory degrades to in-memory indices.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <barrier>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <unistd.h>

#include "data/gpt_dataset/gpt_dataset.h"
#include "data/indexed/indexed_dataset.h"
#include "data/loader/gpt_data.h"

using namespace gptrain;
namespace fs = std::filesystem;

namespace {

fs::path cache_scratch(const std::string& name) {
  fs::path p = fs::temp_directory_path() / fmt::format("gptrain_test_{}_{}", name, ::getpid());
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::string write_dataset(const fs::path& dir) {
  const std::string prefix = (dir / "corpus").string();
  // uint16 is code 8 (spelled through decltype so this compiles with either name of the enum).
  IndexedDatasetWriter w(prefix, static_cast<decltype(std::declval<const IndexedDataset&>().dtype())>(8));
  std::mt19937 g(17);
  for (int d = 0; d < 200; ++d) {
    std::vector<int32_t> toks(1 + g() % 70);
    for (auto& t : toks) t = static_cast<int32_t>(g() % 50000);
    toks.back() = 50256;
    w.add_sequence(toks);
    w.end_document();
  }
  w.finalize();
  return prefix;
}

std::vector<int32_t> all_tokens(const SampleDataset& ds) {
  std::vector<int32_t> out, w(static_cast<size_t>(ds.seq_length()) + 1);
  for (int64_t i = 0; i < ds.size(); ++i) {
    ds.read_sample(i, w);
    out.insert(out.end(), w.begin(), w.end());
  }
  return out;
}

bool from_cache(const std::shared_ptr<const SampleDataset>& ds) {
  auto g = std::dynamic_pointer_cast<const GPTDataset>(ds);
  REQUIRE(g);
  return g->index().from_cache;
}

std::vector<GPTDatasets> build_on_ranks(const DataArgs& args, int64_t seq_length, const SplitSampleCounts& counts,
                                        int ranks) {
  std::vector<GPTDatasets> out(static_cast<size_t>(ranks));
  std::barrier sync(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      out[r] = build_gpt_datasets(args, seq_length, 1234, counts, {r == 0, [&] { sync.arrive_and_wait(); }});
    });
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace

TEST_CASE("rank 0 builds the index cache, the other ranks map it") {
  const fs::path dir = cache_scratch("cache_ranks");
  DataArgs args;
  args.data_path = {write_dataset(dir)};
  args.split = "90,8,2";
  const SplitSampleCounts counts = {700, 60, 10};

  auto ds = build_on_ranks(args, 16, counts, 4);
  CHECK(!from_cache(ds[0].train));
  const auto want = all_tokens(*ds[0].train);
  for (int r = 1; r < 4; ++r) {
    CHECK(from_cache(ds[r].train));
    CHECK(from_cache(ds[r].valid));
    CHECK(all_tokens(*ds[r].train) == want);
    CHECK(all_tokens(*ds[r].valid) == all_tokens(*ds[0].valid));
  }
  CHECK(fs::is_directory(dir / "corpus" / "cache" / "GPTDataset_indices"));
  // A relaunch finds everything cached, rank 0 included.
  ds = build_on_ranks(args, 16, counts, 2);
  CHECK(from_cache(ds[0].train));
  CHECK(all_tokens(*ds[0].train) == want);
  fs::remove_all(dir);
}

TEST_CASE("an unwritable cache directory falls back to in-memory indices") {
  const fs::path dir = cache_scratch("cache_unwritable");
  DataArgs args;
  args.data_path = {write_dataset(dir)};
  args.split.emplace("100, 0, 0");
  std::ofstream(dir / "not_a_dir") << "x";
  args.data_cache_path = (dir / "not_a_dir" / "cache").string();
  auto ds = build_on_ranks(args, 8, {300, std::nullopt, std::nullopt}, 3);
  REQUIRE(ds[0].train);
  CHECK(!ds[0].valid);
  CHECK(!ds[0].test);
  for (int r = 0; r < 3; ++r) {
    CHECK(!from_cache(ds[r].train));
    CHECK(all_tokens(*ds[r].train) == all_tokens(*ds[0].train));
  }
  fs::remove_all(dir);
}
