#include "data/gpt_dataset/npy_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/common/error.h"

namespace gptrain {

int64_t NpyArray::num_elements() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

static size_t descr_item_size(const std::string& d) {
  if (d.size() != 3 || d[0] != '<') return 0;
  const int bytes = d[2] - '0';
  if ((d[1] != 'i' && d[1] != 'u') || (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)) return 0;
  return static_cast<size_t>(bytes);
}

void write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape, const void* data,
               size_t item_size) {
  check(descr_item_size(descr) == item_size, "write_npy {}: dtype {} does not have {} bytes", path, descr, item_size);
  std::string shape_str = "(";
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    shape_str += std::to_string(shape[i]) + (shape.size() == 1 ? ",)" : (i + 1 == shape.size() ? ")" : ", "));
    n *= shape[i];
  }
  if (shape.empty()) shape_str = "()";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_str + ", }";
  const size_t prefix = 10;  // magic(6) + version(2) + header length(2)
  size_t total = prefix + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    check(f.good(), "{}: cannot create: {}", tmp, std::strerror(errno));
    const uint16_t hlen = static_cast<uint16_t>(header.size());
    f.write("\x93NUMPY\x01\x00", 8);
    const char hl[2] = {static_cast<char>(hlen & 0xff), static_cast<char>(hlen >> 8)};
    f.write(hl, 2);
    f.write(header.data(), static_cast<std::streamsize>(header.size()));
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(static_cast<size_t>(n) * item_size));
    f.flush();
    check(f.good(), "{}: write failed (disk full?)", tmp);
  }
  std::filesystem::rename(tmp, path);
}

NpyArray map_npy(const std::string& path) {
  NpyArray a;
  a.file = std::make_shared<MappedFile>(path);
  const auto* p = reinterpret_cast<const uint8_t*>(a.file->data());
  const size_t size = a.file->size();
  check(size >= 10 && std::memcmp(p, "\x93NUMPY", 6) == 0 && p[6] == 1, "{}: not a .npy file (format 1.x)", path);
  const size_t hlen = static_cast<size_t>(p[8]) | (static_cast<size_t>(p[9]) << 8);
  check(10 + hlen <= size, "{}: truncated .npy header", path);
  const std::string h(reinterpret_cast<const char*>(p + 10), hlen);
  auto field = [&](const char* key) {
    const size_t k = h.find(key);
    check(k != std::string::npos, "{}: .npy header lacks {}", path, key);
    return k + std::strlen(key);
  };
  size_t k = field("'descr':");
  const size_t q1 = h.find('\'', k), q2 = h.find('\'', q1 + 1);
  check(q1 != std::string::npos && q2 != std::string::npos, "{}: bad descr in .npy header", path);
  a.descr = h.substr(q1 + 1, q2 - q1 - 1);
  const size_t item = descr_item_size(a.descr);
  check(item != 0, "{}: unsupported dtype '{}'", path, a.descr);
  k = field("'fortran_order':");
  const size_t order = h.find_first_not_of(' ', k);
  check(order != std::string::npos && h.compare(order, 5, "False") == 0, "{}: fortran-ordered arrays are not supported",
        path);
  k = field("'shape':");
  const size_t o = h.find('(', k), c = h.find(')', k);
  check(o != std::string::npos && c != std::string::npos && o < c, "{}: bad shape in .npy header", path);
  std::string dims = h.substr(o + 1, c - o - 1);
  size_t i = 0;
  while (i < dims.size()) {
    while (i < dims.size() && (dims[i] == ' ' || dims[i] == ',')) ++i;
    if (i >= dims.size()) break;
    size_t j = i;
    while (j < dims.size() && dims[j] >= '0' && dims[j] <= '9') ++j;
    // Eighteen digits always fit an int64; a longer dimension cannot match any file's size.
    check(j > i && j - i <= 18, "{}: bad shape '{}' in .npy header", path, dims);
    a.shape.push_back(std::stoll(dims.substr(i, j - i)));
    i = j;
  }
  // The byte count with overflow checks: a damaged shape must not wrap around to the file's size.
  size_t bytes = item;
  for (int64_t d : a.shape)
    check(!__builtin_mul_overflow(bytes, static_cast<size_t>(d), &bytes) && bytes <= size,
          "{}: shape ({}) needs more bytes than the file has ({})", path, dims, size);
  check(10 + hlen + bytes == size, "{}: expected {} data bytes after the header, file has {}", path, bytes,
        size - 10 - hlen);
  a.data = p + 10 + hlen;
  return a;
}

uint64_t checksum64(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ bytes;
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ (w * 0xff51afd7ed558ccdULL)) * 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 29;
  }
  for (; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h ^ (h >> 32);
}

}  // namespace gptrain
