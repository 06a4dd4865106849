// IndexedDatasetWriter and write_index_file. Layout: indexed_dataset.h / docs/megatron-compat.md §1.2.
#include "core/common/error.h"
#include "data/indexed/index_format.h"
#include "data/indexed/indexed_dataset.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <regex>

namespace gptrain {

namespace {

std::string temp_name(const std::string& path, const void* owner) {
  return fmt::format("{}.tmp.{}.{:x}", path, static_cast<long>(::getpid()), reinterpret_cast<uintptr_t>(owner));
}

// Temporaries "<prefix>.bin|idx.tmp.<pid>.<hex>" of a writer whose process no longer exists (killed by a
// signal before it could remove them). Only names of exactly that form, only for this prefix.
void remove_stale_temporaries(const std::string& prefix) {
  namespace fs = std::filesystem;
  const fs::path p(prefix);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string base = p.filename().string();
  static const std::regex tail(R"(\.(bin|idx)\.tmp\.(\d{1,10})\.[0-9a-f]{1,16})");
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    std::smatch m;
    if (n.size() <= base.size() || n.compare(0, base.size(), base) != 0) continue;
    const std::string rest = n.substr(base.size());
    if (!std::regex_match(rest, m, tail) || !e.is_regular_file(ec)) continue;
    const long pid = std::stol(m[2].str());
    if (pid != ::getpid() && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) stale.push_back(e.path());
  }
  for (const auto& f : stale) fs::remove(f, ec);
}

void write_all(std::FILE* f, const void* data, size_t bytes, const std::string& path) {
  if (bytes && std::fwrite(data, 1, bytes, f) != bytes)
    fail("{}: write failed after {} bytes: {}", path, std::ftell(f), std::strerror(errno));
}

template <typename T>
void convert_from_int32(std::span<const int32_t> tokens, std::byte* out, IndexDType dtype) {
  for (size_t k = 0; k < tokens.size(); ++k) {
    const int32_t t = tokens[k];
    if constexpr (std::is_integral_v<T> && sizeof(T) < 4) {
      if (t < static_cast<int32_t>(std::numeric_limits<T>::min()) ||
          t > static_cast<int32_t>(std::numeric_limits<T>::max()))
        fail("token {} does not fit the dataset dtype {}", t, index_dtype_name(dtype));
    }
    const T v = static_cast<T>(t);
    std::memcpy(out + k * sizeof(T), &v, sizeof(T));
  }
}

}  // namespace

void write_index_file(const std::string& path, IndexDType dtype, std::span<const int32_t> lengths,
                      std::span<const int64_t> doc_idx) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail("{}: cannot create: {}", path, std::strerror(errno));
  try {
    const uint64_t S = lengths.size();
    const uint64_t D = doc_idx.size();
    const uint8_t code = static_cast<uint8_t>(dtype);
    write_all(f, kIndexMagic, sizeof(kIndexMagic), path);
    write_all(f, &kIndexVersion, 8, path);
    write_all(f, &code, 1, path);
    write_all(f, &S, 8, path);
    write_all(f, &D, 8, path);
    write_all(f, lengths.data(), 4 * S, path);
    // Pointers: byte offset of each sequence, the running sum of length * itemsize.
    const int64_t item = static_cast<int64_t>(index_dtype_size(dtype));
    std::vector<int64_t> pointers(S);
    int64_t offset = 0;
    for (uint64_t i = 0; i < S; ++i) {
      pointers[i] = offset;
      offset += static_cast<int64_t>(lengths[i]) * item;
    }
    write_all(f, pointers.data(), 8 * S, path);
    write_all(f, doc_idx.data(), 8 * D, path);
    if (std::fclose(f) != 0) {
      f = nullptr;
      fail("{}: close failed: {}", path, std::strerror(errno));
    }
  } catch (...) {
    if (f) std::fclose(f);
    std::remove(path.c_str());
    throw;
  }
}

IndexedDatasetWriter::IndexedDatasetWriter(std::string prefix, IndexDType dtype)
    : prefix_(std::move(prefix)), dtype_(dtype) {
  remove_stale_temporaries(prefix_);
  bin_tmp_ = temp_name(prefix_ + ".bin", this);
  idx_tmp_ = temp_name(prefix_ + ".idx", this);
  bin_ = std::fopen(bin_tmp_.c_str(), "wb");
  if (!bin_) fail("{}: cannot create (for {}.bin): {}", bin_tmp_, prefix_, std::strerror(errno));
  doc_idx_.push_back(0);
}

IndexedDatasetWriter::~IndexedDatasetWriter() {
  if (!finalized_) abandon();
}

void IndexedDatasetWriter::abandon() noexcept {
  if (bin_) std::fclose(bin_);
  bin_ = nullptr;
  std::remove(bin_tmp_.c_str());
  std::remove(idx_tmp_.c_str());
}

void IndexedDatasetWriter::write_bin(const void* data, size_t bytes) {
  check(!finalized_, "{}: dataset already finalized", prefix_);
  write_all(bin_, data, bytes, bin_tmp_);
}

void IndexedDatasetWriter::add_sequence(std::span<const int32_t> tokens) {
  check(tokens.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()),
        "{}: a sequence of {} tokens does not fit the int32 length field", prefix_, tokens.size());
  const size_t item = index_dtype_size(dtype_);
  if (dtype_ == IndexDType::int32) {
    write_bin(tokens.data(), tokens.size() * 4);
  } else {
    convert_buf_.resize(tokens.size() * item);
    switch (dtype_) {
      case IndexDType::uint8: convert_from_int32<uint8_t>(tokens, convert_buf_.data(), dtype_); break;
      case IndexDType::int8: convert_from_int32<int8_t>(tokens, convert_buf_.data(), dtype_); break;
      case IndexDType::int16: convert_from_int32<int16_t>(tokens, convert_buf_.data(), dtype_); break;
      case IndexDType::uint16: convert_from_int32<uint16_t>(tokens, convert_buf_.data(), dtype_); break;
      case IndexDType::int32: break;
      case IndexDType::int64: convert_from_int32<int64_t>(tokens, convert_buf_.data(), dtype_); break;
      case IndexDType::float32: convert_from_int32<float>(tokens, convert_buf_.data(), dtype_); break;
      case IndexDType::float64: convert_from_int32<double>(tokens, convert_buf_.data(), dtype_); break;
    }
    write_bin(convert_buf_.data(), convert_buf_.size());
  }
  lengths_.push_back(static_cast<int32_t>(tokens.size()));
  num_tokens_ += static_cast<int64_t>(tokens.size());
}

void IndexedDatasetWriter::end_document() {
  check(!finalized_, "{}: dataset already finalized", prefix_);
  doc_idx_.push_back(static_cast<int64_t>(lengths_.size()));
}

void IndexedDatasetWriter::add_document(std::span<const int32_t> tokens, std::span<const int32_t> lengths) {
  size_t start = 0;
  for (int32_t len : lengths) {
    check(len >= 0 && start + static_cast<size_t>(len) <= tokens.size(),
          "{}: add_document: sequence lengths sum past the {} tokens given", prefix_, tokens.size());
    add_sequence(tokens.subspan(start, static_cast<size_t>(len)));
    start += static_cast<size_t>(len);
  }
  check(start == tokens.size(), "{}: add_document: lengths cover {} of {} tokens", prefix_, start, tokens.size());
  end_document();
}

void IndexedDatasetWriter::add_dataset(const std::string& other_prefix) {
  check(!finalized_, "{}: dataset already finalized", prefix_);
  IndexedDataset other = IndexedDataset::open(other_prefix);
  if (other.dtype() != dtype_)
    fail("{}: cannot append {} (dtype {}) to a {} dataset: all merged datasets need the same dtype", prefix_,
         other_prefix, index_dtype_name(other.dtype()), index_dtype_name(dtype_));
  if (doc_idx_.back() != static_cast<int64_t>(lengths_.size())) end_document();
  const auto bytes = other.bin_bytes();
  write_bin(bytes.data(), bytes.size());
  const int64_t base = static_cast<int64_t>(lengths_.size());
  const auto lens = other.sequence_lengths();
  lengths_.insert(lengths_.end(), lens.begin(), lens.end());
  const auto docs = other.document_indices();
  for (size_t d = 1; d < docs.size(); ++d) doc_idx_.push_back(base + docs[d]);
  num_tokens_ += other.num_tokens();
}

void IndexedDatasetWriter::finalize() {
  check(!finalized_, "{}: dataset already finalized", prefix_);
  if (doc_idx_.back() != static_cast<int64_t>(lengths_.size())) end_document();
  const int rc = std::fclose(bin_);
  bin_ = nullptr;
  if (rc != 0) {
    abandon();
    fail("{}: close failed: {}", bin_tmp_, std::strerror(errno));
  }
  try {
    write_index_file(idx_tmp_, dtype_, lengths_, doc_idx_);
    const std::string bin_path = prefix_ + ".bin";
    const std::string idx_path = prefix_ + ".idx";
    if (std::rename(bin_tmp_.c_str(), bin_path.c_str()) != 0)
      fail("{}: cannot rename to {}: {}", bin_tmp_, bin_path, std::strerror(errno));
    if (std::rename(idx_tmp_.c_str(), idx_path.c_str()) != 0)
      fail("{}: cannot rename to {}: {}", idx_tmp_, idx_path, std::strerror(errno));
  } catch (...) {
    abandon();
    throw;
  }
  finalized_ = true;
}

}  // namespace gptrain
