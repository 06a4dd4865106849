#include "core/safetensors/writer.h"

#include "core/common/error.h"
#include "core/safetensors/reader.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

namespace gptrain::safetensors {

using nlohmann::json;

uint64_t TensorSpec::nbytes() const {
  const uint64_t bits = static_cast<uint64_t>(shape_numel(shape)) * dtype_bits(dtype);
  return (bits + 7) / 8;
}

Writer::Writer(std::string path, std::vector<TensorSpec> specs, std::map<std::string, std::string> metadata)
    : path_(std::move(path)) {
  std::vector<TensorSpec> order = std::move(specs);
  for (const auto& s : order) {
    if (s.name.empty() || s.name == "__metadata__") fail("{}: invalid tensor name \"{}\"", path_, s.name);
    for (int64_t d : s.shape)
      if (d < 0) fail("{}: tensor \"{}\" has a negative dimension in shape {}", path_, s.name, shape_string(s.shape));
    if ((static_cast<uint64_t>(shape_numel(s.shape)) * dtype_bits(s.dtype)) % 8 != 0)
      fail("{}: tensor \"{}\" does not fill whole bytes", path_, s.name);
  }
  // Reference order: larger alignment first, then by name (keeps every tensor naturally aligned).
  std::stable_sort(order.begin(), order.end(), [](const TensorSpec& a, const TensorSpec& b) {
    const auto aa = dtype_bits(a.dtype), ab = dtype_bits(b.dtype);
    return aa != ab ? aa > ab : a.name < b.name;
  });
  json header = json::object();
  json meta = json::object();
  for (auto& [k, v] : metadata) meta[k] = v;
  meta["format"] = "pt";
  header["__metadata__"] = meta;
  uint64_t off = 0;
  for (auto& s : order) {
    const uint64_t n = s.nbytes();
    header[s.name] = {
        {"dtype", std::string(dtype_name(s.dtype))}, {"shape", s.shape}, {"data_offsets", {off, off + n}}};
    Slot slot{s, off, false};
    if (!slots_.emplace(s.name, std::move(slot)).second) fail("{}: tensor \"{}\" declared twice", path_, s.name);
    off += n;
  }
  data_len_ = off;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  data_start_ = 8 + text.size();

  tmp_path_ = path_ + ".tmp." + std::to_string(::getpid());
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("{}: cannot create: {}", tmp_path_, std::strerror(errno));
  const uint64_t hl = text.size();
  pwrite_all(&hl, 8, 0);
  pwrite_all(text.data(), text.size(), 8);
  // Size the file now so a tensor written out of order leaves no gap to fill later.
  if (::ftruncate(fd_, static_cast<off_t>(file_size())) != 0)
    fail("{}: ftruncate failed: {}", tmp_path_, std::strerror(errno));
}

Writer::~Writer() {
  if (fd_ >= 0) ::close(fd_);
  if (!finished_ && !tmp_path_.empty()) std::remove(tmp_path_.c_str());
}

Writer::Slot& Writer::slot(const std::string& name) {
  auto it = slots_.find(name);
  if (it == slots_.end()) fail("{}: tensor \"{}\" was not declared when the file was started", path_, name);
  if (it->second.written) fail("{}: tensor \"{}\" written twice", path_, name);
  return it->second;
}

void Writer::pwrite_all(const void* p, std::size_t n, uint64_t offset) {
  const auto* b = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd_, b, n, static_cast<off_t>(offset));
    if (w < 0) {
      if (errno == EINTR) continue;
      fail("{}: write failed: {}", tmp_path_, std::strerror(errno));
    }
    b += w;
    n -= static_cast<std::size_t>(w);
    offset += static_cast<uint64_t>(w);
  }
}

void Writer::write(const std::string& name, std::span<const std::byte> bytes) {
  if (finished_) fail("{}: write after finish()", path_);
  Slot& s = slot(name);
  if (bytes.size() != s.spec.nbytes())
    fail("{}: tensor \"{}\" declared as {} {} ({} bytes) but {} bytes were given", path_, name,
         dtype_name(s.spec.dtype), shape_string(s.spec.shape), s.spec.nbytes(), bytes.size());
  pwrite_all(bytes.data(), bytes.size(), data_start_ + s.begin);
  s.written = true;
}

void Writer::write_f32(const std::string& name, const float* src, std::size_t n) {
  if (finished_) fail("{}: write after finish()", path_);
  Slot& s = slot(name);
  if (static_cast<int64_t>(n) != shape_numel(s.spec.shape))
    fail("{}: tensor \"{}\" declared with shape {} ({} elements) but {} values were given", path_, name,
         shape_string(s.spec.shape), shape_numel(s.spec.shape), n);
  const std::size_t es = dtype_bits(s.spec.dtype) / 8;
  if (s.spec.dtype == DType::F32) {
    pwrite_all(src, n * 4, data_start_ + s.begin);
  } else {
    constexpr std::size_t kChunk = 1 << 20;  // elements converted per write
    std::vector<unsigned char> buf(std::min(n, kChunk) * es);
    for (std::size_t i = 0; i < n; i += kChunk) {
      const std::size_t m = std::min(kChunk, n - i);
      from_f32(buf.data(), s.spec.dtype, src + i, m);
      pwrite_all(buf.data(), m * es, data_start_ + s.begin + i * es);
    }
  }
  s.written = true;
}

uint64_t Writer::finish() {
  if (finished_) fail("{}: finish() called twice", path_);
  for (const auto& [name, s] : slots_)
    if (!s.written) fail("{}: tensor \"{}\" was declared but never written", path_, name);
  if (::fsync(fd_) != 0) fail("{}: fsync failed: {}", tmp_path_, std::strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("{}: close failed: {}", tmp_path_, std::strerror(errno));
  }
  fd_ = -1;
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0)
    fail("{}: cannot rename {} into place: {}", path_, tmp_path_, std::strerror(errno));
  finished_ = true;
  return file_size();
}

void write_file(const std::string& path, std::span<const HostTensorRef> tensors,
                std::map<std::string, std::string> metadata) {
  std::vector<TensorSpec> specs;
  specs.reserve(tensors.size());
  for (const auto& t : tensors) specs.push_back(t.spec);
  Writer w(path, std::move(specs), std::move(metadata));
  for (const auto& t : tensors) w.write_f32(t.spec.name, t.data, static_cast<std::size_t>(shape_numel(t.spec.shape)));
  w.finish();
}

}  // namespace gptrain::safetensors
