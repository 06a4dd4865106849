// IndexedDataset (reader), MappedFile and the dtype helpers. Layout: indexed_dataset.h.
#include "data/indexed/indexed_dataset.h"

#include "core/common/error.h"
#include "data/indexed/index_format.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

namespace gptrain {

bool is_valid_index_dtype_code(uint8_t code) { return code >= 1 && code <= 8; }

size_t index_dtype_size(IndexDType dtype) {
  switch (dtype) {
    case IndexDType::uint8:
    case IndexDType::int8: return 1;
    case IndexDType::int16:
    case IndexDType::uint16: return 2;
    case IndexDType::int32:
    case IndexDType::float32: return 4;
    case IndexDType::int64:
    case IndexDType::float64: return 8;
  }
  fail("dtype code {} is not one of Megatron's codes 1..8", static_cast<int>(dtype));
}

const char* index_dtype_name(IndexDType dtype) {
  switch (dtype) {
    case IndexDType::uint8: return "uint8";
    case IndexDType::int8: return "int8";
    case IndexDType::int16: return "int16";
    case IndexDType::int32: return "int32";
    case IndexDType::int64: return "int64";
    case IndexDType::float64: return "float64";
    case IndexDType::float32: return "float32";
    case IndexDType::uint16: return "uint16";
  }
  return "invalid";
}

IndexDType optimal_index_dtype(int64_t vocab_size) {
  return vocab_size < 65500 ? IndexDType::uint16 : IndexDType::int32;
}

// ---------------------------------------------------------------------------------------------------
MappedFile::MappedFile(const std::string& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever; it is refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail("{}: cannot stat: {}", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{}: not a regular file ({}); a dataset is a .bin/.idx pair of files", path,
         S_ISDIR(st.st_mode)    ? "a directory"
         : S_ISFIFO(st.st_mode) ? "a pipe"
                                : "a device or socket");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail("{}: cannot mmap {} bytes: {}", path, size_, std::strerror(e));
    }
    data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
    path_ = std::move(other.path_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

// ---------------------------------------------------------------------------------------------------
namespace {

template <typename T>
T load_le(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));  // x86/ARM hosts are little-endian, as the format is
  return v;
}

// Copies n unaligned little-endian values of type T out of the file.
template <typename T>
std::vector<T> load_array(const std::byte* p, uint64_t n) {
  std::vector<T> v(n);
  if (n) std::memcpy(v.data(), p, n * sizeof(T));
  return v;
}

template <typename T>
void convert_to_int32(const std::byte* src, int64_t count, int32_t* out, const std::string& prefix, int64_t seq) {
  for (int64_t k = 0; k < count; ++k) {
    T v;
    std::memcpy(&v, src + k * sizeof(T), sizeof(T));
    if constexpr (std::is_floating_point_v<T>) {
      if (!(v == std::floor(v)) || v < static_cast<T>(std::numeric_limits<int32_t>::min()) ||
          v > static_cast<T>(std::numeric_limits<int32_t>::max()))
        fail("{}.bin: sequence {} holds {} which is not an int32 token id", prefix, seq, v);
    } else if constexpr (sizeof(T) >= 4 && !std::is_same_v<T, int32_t>) {
      if (v < static_cast<T>(std::numeric_limits<int32_t>::min()) ||
          v > static_cast<T>(std::numeric_limits<int32_t>::max()))
        fail("{}.bin: sequence {} holds {} which does not fit in int32", prefix, seq, v);
    }
    out[k] = static_cast<int32_t>(v);
  }
}

}  // namespace

IndexedDataset IndexedDataset::open(const std::string& prefix, IndexedDatasetOptions options) {
  IndexedDataset ds;
  ds.prefix_ = prefix;
  const std::string idx_path = prefix + ".idx";
  const std::string bin_path = prefix + ".bin";
  MappedFile idx(idx_path);
  const std::byte* p = idx.data();
  const uint64_t size = idx.size();

  if (size < kIndexHeaderBytes)
    fail("{}: {} bytes is shorter than the {}-byte MMIDIDX header (truncated or not an index file)", idx_path, size,
         kIndexHeaderBytes);
  if (std::memcmp(p, kIndexMagic, sizeof(kIndexMagic)) != 0)
    fail(
        "{}: bad magic: expected \"MMIDIDX\\0\\0\" (Megatron mmap indexed dataset); the legacy "
        "\"TNTIDX\" lazy/cached format is not supported",
        idx_path);
  const uint64_t version = load_le<uint64_t>(p + 9);
  if (version != 1) fail("{}: index version {} is not supported (expected 1)", idx_path, version);
  const uint8_t code = load_le<uint8_t>(p + 17);
  if (!is_valid_index_dtype_code(code))
    fail("{}: dtype code {} is invalid (expected 1..8: uint8 int8 int16 int32 int64 float64 float32 uint16)", idx_path,
         code);
  ds.dtype_ = static_cast<IndexDType>(code);
  const uint64_t S = load_le<uint64_t>(p + 18);
  const uint64_t D = load_le<uint64_t>(p + 26);
  // Check the counts against the file size before multiplying, so a corrupt header cannot overflow.
  const uint64_t body = size - kIndexHeaderBytes;
  if (S > body / 12 || D > body / 8)
    fail(
        "{}: header says {} sequences and {} document-index entries, more than the {}-byte file can hold "
        "(truncated or corrupt)",
        idx_path, S, D, size);
  const uint64_t expected = kIndexHeaderBytes + 12 * S + 8 * D + (options.multimodal ? S : 0);
  if (size != expected) {
    std::string hint;
    if (!options.multimodal && size == expected + S && S > 0)
      hint = " (the extra bytes fit a multimodal dataset's per-sequence modes; open it as multimodal)";
    fail(
        "{}: size is {} bytes but the header ({} sequences, {} document-index entries{}) needs {} "
        "(truncated or corrupt){}",
        idx_path, size, S, D, options.multimodal ? ", multimodal" : "", expected, hint);
  }
  if (D < 1) fail("{}: document index is empty (expected at least one entry, 0)", idx_path);

  const std::byte* q = p + kIndexHeaderBytes;
  ds.lengths_ = load_array<int32_t>(q, S);
  ds.pointers_ = load_array<int64_t>(q + 4 * S, S);
  ds.doc_idx_ = load_array<int64_t>(q + 12 * S, D);
  if (options.multimodal) ds.modes_ = load_array<int8_t>(q + 12 * S + 8 * D, S);

  const int64_t item = static_cast<int64_t>(index_dtype_size(ds.dtype_));
  int64_t offset = 0;
  for (uint64_t i = 0; i < S; ++i) {
    if (ds.lengths_[i] < 0) fail("{}: sequence {} has negative length {}", idx_path, i, ds.lengths_[i]);
    if (ds.pointers_[i] != offset)
      fail("{}: sequence {} points at byte {} but the lengths before it end at byte {} (corrupt index)", idx_path, i,
           ds.pointers_[i], offset);
    offset += static_cast<int64_t>(ds.lengths_[i]) * item;
    ds.num_tokens_ += ds.lengths_[i];
  }
  if (ds.doc_idx_[0] != 0) fail("{}: document index starts at {} (expected 0)", idx_path, ds.doc_idx_[0]);
  for (uint64_t d = 1; d < D; ++d)
    if (ds.doc_idx_[d] < ds.doc_idx_[d - 1])
      fail("{}: document index decreases at entry {} ({} after {})", idx_path, d, ds.doc_idx_[d], ds.doc_idx_[d - 1]);
  if (ds.doc_idx_[D - 1] != static_cast<int64_t>(S))
    fail("{}: document index ends at {} but there are {} sequences (corrupt index)", idx_path, ds.doc_idx_[D - 1], S);

  ds.bin_ = MappedFile(bin_path);
  if (static_cast<int64_t>(ds.bin_.size()) != offset)
    fail(
        "{}: size is {} bytes but {} holds {} tokens of {} = {} bytes (truncated, or .bin and .idx do not "
        "belong together)",
        bin_path, ds.bin_.size(), idx_path, ds.num_tokens_, index_dtype_name(ds.dtype_), offset);
  return ds;
}

void IndexedDataset::read_tokens(int64_t i, int64_t offset, int64_t count, int32_t* out) const {
  if (i < 0 || i >= num_sequences())
    fail("{}: sequence {} out of range (dataset has {} sequences)", prefix_, i, num_sequences());
  const int64_t len = lengths_[i];
  if (offset < 0 || count < 0 || offset > len || count > len - offset)
    fail("{}: tokens [{}, {}) out of range for sequence {} of length {}", prefix_, offset, offset + count, i, len);
  const std::byte* src = bin_.data() + pointers_[i] + offset * static_cast<int64_t>(itemsize());
  switch (dtype_) {
    case IndexDType::uint8: convert_to_int32<uint8_t>(src, count, out, prefix_, i); break;
    case IndexDType::int8: convert_to_int32<int8_t>(src, count, out, prefix_, i); break;
    case IndexDType::int16: convert_to_int32<int16_t>(src, count, out, prefix_, i); break;
    case IndexDType::uint16: convert_to_int32<uint16_t>(src, count, out, prefix_, i); break;
    case IndexDType::int32: convert_to_int32<int32_t>(src, count, out, prefix_, i); break;
    case IndexDType::int64: convert_to_int32<int64_t>(src, count, out, prefix_, i); break;
    case IndexDType::float32: convert_to_int32<float>(src, count, out, prefix_, i); break;
    case IndexDType::float64: convert_to_int32<double>(src, count, out, prefix_, i); break;
  }
}

std::vector<int32_t> IndexedDataset::sequence(int64_t i) const {
  if (i < 0 || i >= num_sequences())
    fail("{}: sequence {} out of range (dataset has {} sequences)", prefix_, i, num_sequences());
  std::vector<int32_t> out(lengths_[i]);
  read_tokens(i, 0, lengths_[i], out.data());
  return out;
}

}  // namespace gptrain
