#include "core/safetensors/reader.h"

#include "core/common/error.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

namespace gptrain::safetensors {

using nlohmann::json;

// The reference implementation's limit (safetensors/src/tensor.rs MAX_HEADER_SIZE).
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

int64_t shape_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

int64_t TensorInfo::numel() const { return shape_numel(shape); }

Reader::Reader(std::string path) : path_(std::move(path)) {
  // O_NONBLOCK: a FIFO in a checkpoint's place would otherwise block the open forever.
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("{}: cannot open safetensors file: {}", path_, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail("{}: cannot stat: {}", path_, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{}: not a regular file, expected a safetensors file", path_);
  }
  map_len_ = static_cast<std::size_t>(st.st_size);
  if (map_len_ < 8) {
    ::close(fd);
    fail("{}: not a safetensors file: {} bytes, expected at least 8 (the header length)", path_, map_len_);
  }
  void* m = ::mmap(nullptr, map_len_, PROT_READ, MAP_PRIVATE, fd, 0);
  const int e = errno;
  ::close(fd);
  if (m == MAP_FAILED) fail("{}: mmap failed: {}", path_, std::strerror(e));
  map_ = static_cast<const std::byte*>(m);
  try {
    uint64_t n = 0;
    std::memcpy(&n, map_, 8);  // little-endian host (x86-64, aarch64)
    if (n > kMaxHeaderBytes)
      fail("{}: header length {} exceeds the safetensors limit of {} bytes (corrupt or not a safetensors file)", path_,
           n, kMaxHeaderBytes);
    if (n > map_len_ - 8)
      fail("{}: header length {} runs past the end of the {}-byte file (truncated or not a safetensors file)", path_, n,
           map_len_);
    data_start_ = 8 + static_cast<std::size_t>(n);
    validate_and_index(reinterpret_cast<const char*>(map_ + 8), n, map_len_ - data_start_);
  } catch (...) {
    unmap();
    throw;
  }
}

Reader::~Reader() { unmap(); }

Reader::Reader(Reader&& o) noexcept { *this = std::move(o); }

Reader& Reader::operator=(Reader&& o) noexcept {
  if (this != &o) {
    unmap();
    path_ = std::move(o.path_);
    map_ = std::exchange(o.map_, nullptr);
    map_len_ = std::exchange(o.map_len_, 0);
    data_start_ = o.data_start_;
    tensors_ = std::move(o.tensors_);
    index_ = std::move(o.index_);
    metadata_ = std::move(o.metadata_);
  }
  return *this;
}

void Reader::unmap() {
  if (map_) ::munmap(const_cast<std::byte*>(map_), map_len_);
  map_ = nullptr;
}

void Reader::validate_and_index(const char* header, std::size_t header_len, uint64_t data_len) {
  const std::string_view text(header, header_len);
  if (text.empty() || text[0] != '{')
    fail("{}: header must be a JSON object starting with '{{' (got {} bytes starting with 0x{:02x})", path_, header_len,
         text.empty() ? 0 : static_cast<unsigned char>(text[0]));
  // Duplicate top-level keys are an error in the reference reader; nlohmann keeps the last one
  // silently, so detect them while parsing.
  std::set<std::string> keys;
  std::string duplicate;
  json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) {
    if (depth == 1 && ev == json::parse_event_t::key) {
      const auto k = parsed.get<std::string>();
      if (!keys.insert(k).second && duplicate.empty()) duplicate = k;
    }
    return true;
  };
  json h;
  try {
    h = json::parse(text, cb);
  } catch (const json::exception& ex) {
    fail("{}: header is not valid JSON: {}", path_, ex.what());
  }
  if (!duplicate.empty()) fail("{}: header has duplicate key \"{}\"", path_, duplicate);
  if (!h.is_object()) fail("{}: header must be a JSON object", path_);

  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& name = it.key();
    const json& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object()) fail("{}: __metadata__ must be an object of string values", path_);
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string())
          fail("{}: __metadata__ value of \"{}\" must be a string (got {})", path_, m.key(), m.value().type_name());
        metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) fail("{}: entry \"{}\" must be an object with dtype, shape, data_offsets", path_, name);
    for (auto f = v.begin(); f != v.end(); ++f)
      if (f.key() != "dtype" && f.key() != "shape" && f.key() != "data_offsets")
        fail("{}: tensor \"{}\" has unknown field \"{}\" (expected dtype, shape, data_offsets)", path_, name, f.key());
    TensorInfo t;
    t.name = name;
    if (!v.contains("dtype") || !v["dtype"].is_string()) fail("{}: tensor \"{}\" has no string \"dtype\"", path_, name);
    const auto dt = parse_dtype(v["dtype"].get<std::string>());
    if (!dt) fail("{}: tensor \"{}\" has unknown dtype \"{}\"", path_, name, v["dtype"].get<std::string>());
    t.dtype = *dt;
    if (!v.contains("shape") || !v["shape"].is_array()) fail("{}: tensor \"{}\" has no \"shape\" array", path_, name);
    for (const auto& d : v["shape"]) {
      if (!d.is_number_unsigned())
        fail("{}: tensor \"{}\" shape has a non-integer or negative entry {}", path_, name, d.dump());
      t.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
    }
    const auto& off = v.contains("data_offsets") ? v["data_offsets"] : json();
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      fail("{}: tensor \"{}\" needs \"data_offsets\": [begin, end] of non-negative integers", path_, name);
    t.begin = off[0].get<uint64_t>();
    t.end = off[1].get<uint64_t>();
    if (t.end < t.begin)
      fail("{}: tensor \"{}\" has data_offsets [{}, {}] with end before begin", path_, name, t.begin, t.end);
    // numel * bits / 8 without overflow: check each factor
    unsigned __int128 bits = dtype_bits(t.dtype);
    for (int64_t d : t.shape) {
      bits *= static_cast<uint64_t>(d);
      if (bits > (static_cast<unsigned __int128>(1) << 100))
        fail("{}: tensor \"{}\" shape is absurdly large", path_, name);
    }
    if (bits % 8 != 0)
      fail("{}: tensor \"{}\" of dtype {} and shape {} does not fill whole bytes", path_, name, dtype_name(t.dtype),
           shape_string(t.shape));
    if (static_cast<unsigned __int128>(t.end - t.begin) != bits / 8)
      fail("{}: tensor \"{}\" has {} data bytes but dtype {} and shape {} need {}", path_, name, t.end - t.begin,
           dtype_name(t.dtype), shape_string(t.shape), static_cast<uint64_t>(bits / 8));
    tensors_.push_back(std::move(t));
  }
  std::sort(tensors_.begin(), tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expect = 0;
  for (const auto& t : tensors_) {
    if (t.begin < expect)
      fail("{}: tensor \"{}\" data [{}, {}) overlaps the previous tensor (which ends at {})", path_, t.name, t.begin,
           t.end, expect);
    if (t.begin > expect)
      fail("{}: hole in the data section: tensor \"{}\" begins at {} but the previous tensor ends at {}", path_, t.name,
           t.begin, expect);
    expect = t.end;
  }
  if (expect != data_len)
    fail("{}: data section is {} bytes but the tensors cover {} bytes (truncated file or wrong offsets)", path_,
         data_len, expect);
  for (std::size_t i = 0; i < tensors_.size(); ++i) index_[tensors_[i].name] = i;
}

const TensorInfo& Reader::info(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) fail("{}: no tensor named \"{}\" ({} tensors in the file)", path_, name, tensors_.size());
  return tensors_[it->second];
}

std::span<const std::byte> Reader::bytes(const std::string& name) const {
  const auto& t = info(name);
  return {map_ + data_start_ + t.begin, t.nbytes()};
}

void Reader::read_f32(const std::string& name, float* dst, std::size_t n) const {
  const auto& t = info(name);
  if (static_cast<std::size_t>(t.numel()) != n)
    fail("{}: tensor \"{}\" has shape {} ({} elements), the reader expected {} elements", path_, name,
         shape_string(t.shape), t.numel(), n);
  read_f32_range(name, 0, dst, n);
}

std::vector<float> Reader::read_f32(const std::string& name) const {
  std::vector<float> v(static_cast<std::size_t>(info(name).numel()));
  read_f32(name, v.data(), v.size());
  return v;
}

void Reader::read_f32_range(const std::string& name, std::size_t first, float* dst, std::size_t n) const {
  const auto& t = info(name);
  if (!dtype_is_float_convertible(t.dtype))
    fail("{}: tensor \"{}\" has dtype {}, expected a float type (F32, BF16, F16, F64)", path_, name,
         dtype_name(t.dtype));
  if (first + n > static_cast<std::size_t>(t.numel()))
    fail("{}: tensor \"{}\" has {} elements, cannot read [{}, {})", path_, name, t.numel(), first, first + n);
  const std::size_t es = dtype_bits(t.dtype) / 8;
  const std::byte* src = map_ + data_start_ + t.begin + first * es;
  // Convert in chunks and drop each chunk's pages from this process's resident set afterwards
  // (they stay in the page cache), so streaming a multi-GB file through a converter costs RSS of
  // the destination buffers only.
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::size_t kChunk = 4 << 20;  // elements
  for (std::size_t i = 0; i < n; i += kChunk) {
    const std::size_t m = std::min(kChunk, n - i);
    const std::byte* p = src + i * es;
    to_f32(dst + i, p, t.dtype, m);
    const auto lo = reinterpret_cast<uintptr_t>(p) / page * page;  // may share a page with the previous chunk: harmless
    const auto hi = (reinterpret_cast<uintptr_t>(p) + m * es) / page * page;
    if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
  }
}

}  // namespace gptrain::safetensors
