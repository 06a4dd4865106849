#include "core/metrics/tfevent.h"

#include "core/common/crc32c.h"

#include <bit>
#include <cstring>

namespace gptrain::metrics::tfevent {

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_key(std::string& out, uint32_t field, uint32_t wire_type) { put_varint(out, (field << 3) | wire_type); }

void put_fixed32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_fixed64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

namespace {

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_key(out, field, 2);
  put_varint(out, bytes.size());
  out.append(bytes);
}

void put_wall_time(std::string& out, double wall_time) {
  put_key(out, 1, 1);
  put_fixed64(out, std::bit_cast<uint64_t>(wall_time));
}

}  // namespace

std::string encode_file_version_event(double wall_time) {
  std::string e;
  put_wall_time(e, wall_time);
  put_bytes(e, 3, "brain.Event:2");
  return e;
}

std::string encode_scalar_event(double wall_time, int64_t step, std::string_view tag, float value) {
  std::string v;  // Summary.Value
  put_bytes(v, 1, tag);
  put_key(v, 2, 5);
  put_fixed32(v, std::bit_cast<uint32_t>(value));
  std::string summary;
  put_bytes(summary, 1, v);
  std::string e;
  put_wall_time(e, wall_time);
  put_key(e, 2, 0);
  put_varint(e, static_cast<uint64_t>(step));  // int64: negative steps take 10 bytes, as protobuf
  put_bytes(e, 5, summary);
  return e;
}

std::string frame_record(std::string_view data) {
  std::string r;
  r.reserve(data.size() + 16);
  put_fixed64(r, data.size());
  put_fixed32(r, mask_crc32c(crc32c(std::string_view(r.data(), 8))));
  r.append(data);
  put_fixed32(r, mask_crc32c(crc32c(data)));
  return r;
}

}  // namespace gptrain::metrics::tfevent
