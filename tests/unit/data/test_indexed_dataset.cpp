// IndexedDataset / IndexedDatasetWriter: the documented byte layout, round trips for every dtype,
// empty documents, merging, and rejection of truncated or corrupt files.
#include "core/common/error.h"
#include "data/indexed/indexed_dataset.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace fs = std::filesystem;
using gptrain::IndexDType;
using gptrain::IndexedDataset;
using gptrain::IndexedDatasetWriter;

namespace {

fs::path scratch_dir() { return fs::temp_directory_path() / fmt::format("gptrain_test_indexed_{}", ::getpid()); }

fs::path indexed_scratch(const std::string& name) {
  fs::create_directories(scratch_dir());
  return scratch_dir() / name;
}

// Declared first in each test case: removes the scratch directory when the case ends.
struct ScratchCleanup {
  ~ScratchCleanup() {
    std::error_code ec;
    fs::remove_all(scratch_dir(), ec);
  }
};

std::vector<unsigned char> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_bytes(const fs::path& p, const std::vector<unsigned char>& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

template <typename T>
void put(std::vector<unsigned char>& v, T x) {
  const size_t at = v.size();
  v.resize(at + sizeof(T));
  std::memcpy(v.data() + at, &x, sizeof(T));
}

// Documents: {[5,6,7]}, {} (empty), {[50256], [1,2]} (two sentences) as uint16.
std::string write_known(const std::string& name) {
  const std::string prefix = indexed_scratch(name).string();
  IndexedDatasetWriter w(prefix, IndexDType::uint16);
  const std::vector<int32_t> a{5, 6, 7}, b{50256}, c{1, 2};
  w.add_sequence(a);
  w.end_document();
  w.end_document();
  w.add_sequence(b);
  w.add_sequence(c);
  w.end_document();
  w.finalize();
  return prefix;
}

}  // namespace

TEST_CASE("indexed: .idx of a known document list matches the documented byte layout") {
  ScratchCleanup cleanup;
  const std::string prefix = write_known("layout");
  std::vector<unsigned char> want;
  const char magic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', 0, 0};
  for (char c : magic) put<char>(want, c);
  put<uint64_t>(want, 1);  // version
  put<uint8_t>(want, 8);   // uint16
  put<uint64_t>(want, 3);  // sequences
  put<uint64_t>(want, 4);  // documents + 1
  for (int32_t len : {3, 1, 2}) put<int32_t>(want, len);
  for (int64_t ptr : {0, 6, 8}) put<int64_t>(want, ptr);
  for (int64_t d : {0, 1, 1, 3}) put<int64_t>(want, d);
  CHECK(read_bytes(prefix + ".idx") == want);
  const std::vector<unsigned char> bin{5, 0, 6, 0, 7, 0, 0x50, 0xC4, 1, 0, 2, 0};
  CHECK(read_bytes(prefix + ".bin") == bin);
  // No temporaries left behind.
  for (const auto& e : fs::directory_iterator(fs::path(prefix).parent_path()))
    CHECK(e.path().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("indexed: reader returns what the writer wrote, for every dtype") {
  ScratchCleanup cleanup;
  for (uint8_t code = 1; code <= 8; ++code) {
    const IndexDType dt = static_cast<IndexDType>(code);
    const std::string prefix = indexed_scratch(fmt::format("dtype{}", code)).string();
    const std::vector<int32_t> a{0, 1, 100, 127}, b{3}, c{};
    {
      IndexedDatasetWriter w(prefix, dt);
      w.add_document(a, std::vector<int32_t>{2, 2});
      w.add_sequence(b);
      w.add_sequence(c);
      w.end_document();
      w.finalize();
    }
    const IndexedDataset ds = IndexedDataset::open(prefix);
    CHECK(ds.dtype_code() == code);
    CHECK(ds.num_sequences() == 4);
    CHECK(ds.num_documents() == 2);
    CHECK(ds.num_tokens() == 5);
    CHECK(std::vector<int64_t>(ds.document_indices().begin(), ds.document_indices().end()) ==
          std::vector<int64_t>{0, 2, 4});
    CHECK(ds.sequence(0) == std::vector<int32_t>{0, 1});
    CHECK(ds.sequence(1) == std::vector<int32_t>{100, 127});
    CHECK(ds.sequence(2) == std::vector<int32_t>{3});
    CHECK(ds.sequence(3).empty());
    int32_t two[2];
    ds.read_tokens(1, 1, 1, two);
    CHECK(two[0] == 127);
    CHECK(ds.sequence_pointers()[2] == static_cast<int64_t>(4 * gptrain::index_dtype_size(dt)));
    CHECK_THROWS_AS(ds.read_tokens(1, 1, 2, two), gptrain::Error);
    CHECK_THROWS_AS(ds.sequence(4), gptrain::Error);
  }
}

TEST_CASE("indexed: writer rejects tokens that do not fit the dtype and leaves nothing behind") {
  ScratchCleanup cleanup;
  const std::string prefix = indexed_scratch("overflow").string();
  {
    IndexedDatasetWriter w(prefix, IndexDType::uint16);
    const std::vector<int32_t> bad{65536};
    CHECK_THROWS_AS(w.add_sequence(bad), gptrain::Error);
  }
  CHECK_FALSE(fs::exists(prefix + ".bin"));
  CHECK_FALSE(fs::exists(prefix + ".idx"));
  CHECK(gptrain::optimal_index_dtype(50257) == IndexDType::uint16);
  CHECK(gptrain::optimal_index_dtype(65500) == IndexDType::int32);
}

TEST_CASE("indexed: merging datasets appends sequences and documents in order") {
  ScratchCleanup cleanup;
  const std::string a = write_known("merge_a");
  const std::string b = indexed_scratch("merge_b").string();
  {
    IndexedDatasetWriter w(b, IndexDType::uint16);
    const std::vector<int32_t> t{9, 9};
    w.add_sequence(t);
    w.end_document();
    w.finalize();
  }
  const std::string m = indexed_scratch("merged").string();
  {
    IndexedDatasetWriter w(m, IndexDType::uint16);
    w.add_dataset(a);
    w.add_dataset(b);
    w.add_dataset(a);
    w.finalize();
  }
  const IndexedDataset ds = IndexedDataset::open(m);
  CHECK(ds.num_sequences() == 7);
  CHECK(ds.num_documents() == 7);
  CHECK(std::vector<int64_t>(ds.document_indices().begin(), ds.document_indices().end()) ==
        std::vector<int64_t>{0, 1, 1, 3, 4, 5, 5, 7});
  CHECK(ds.sequence(3) == std::vector<int32_t>{9, 9});
  CHECK(ds.sequence(6) == std::vector<int32_t>{1, 2});
  // A dtype mismatch is refused.
  IndexedDatasetWriter w32(indexed_scratch("merged32").string(), IndexDType::int32);
  CHECK_THROWS_AS(w32.add_dataset(a), gptrain::Error);
}

TEST_CASE("indexed: truncated or corrupt files are rejected with a clear error") {
  ScratchCleanup cleanup;
  const std::string good = write_known("corrupt_src");
  const auto idx = read_bytes(good + ".idx");
  const auto bin = read_bytes(good + ".bin");
  auto expect_error = [&](std::vector<unsigned char> idx_bytes, std::vector<unsigned char> bin_bytes,
                          const std::string& needle) {
    const std::string p = indexed_scratch("corrupt").string();
    write_bytes(p + ".idx", idx_bytes);
    write_bytes(p + ".bin", bin_bytes);
    try {
      (void)IndexedDataset::open(p);
      FAIL("expected an error containing: " << needle);
    } catch (const gptrain::Error& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(needle) != std::string::npos);
    }
  };
  expect_error({idx.begin(), idx.begin() + 20}, bin, "shorter than");
  expect_error({idx.begin(), idx.end() - 1}, bin, "truncated");
  auto bad_magic = idx;
  bad_magic[0] = 'T';
  expect_error(bad_magic, bin, "bad magic");
  auto bad_version = idx;
  bad_version[9] = 2;
  expect_error(bad_version, bin, "version");
  auto bad_dtype = idx;
  bad_dtype[17] = 9;
  expect_error(bad_dtype, bin, "dtype code 9");
  auto huge_count = idx;
  huge_count[25] = 0x7F;
  expect_error(huge_count, bin, "more than");
  auto bad_pointer = idx;
  bad_pointer[34 + 12 + 8] = 7;  // second pointer
  expect_error(bad_pointer, bin, "points at byte");
  auto bad_doc = idx;
  bad_doc[34 + 36 + 24] = 2;  // last document index entry 3 -> 2
  expect_error(bad_doc, bin, "document index");
  expect_error(idx, {bin.begin(), bin.end() - 2}, ".bin: size is 10 bytes");
  const std::string missing = indexed_scratch("does_not_exist").string();
  CHECK_THROWS_WITH(IndexedDataset::open(missing), Catch::Contains("cannot open"));
  // A pipe in the .bin's place blocked the open forever; a directory in the .idx's failed at mmap.
  const std::string fifo = indexed_scratch("fifo").string();
  write_bytes(fifo + ".idx", idx);
  REQUIRE(::mkfifo((fifo + ".bin").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(IndexedDataset::open(fifo), Catch::Contains(fifo + ".bin: not a regular file (a pipe)"));
  const std::string dir = indexed_scratch("dir").string();
  fs::create_directories(dir + ".idx");
  write_bytes(dir + ".bin", bin);
  CHECK_THROWS_WITH(IndexedDataset::open(dir), Catch::Contains(dir + ".idx: not a regular file (a directory)"));
}
