// The bytes of a TensorBoard event file, encoded by hand (no protobuf library):
//   record  = uint64 length (LE) · uint32 masked_crc32c(length bytes) · data · uint32 masked_crc32c(data)
//   Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
//   Summary { repeated Value value = 1; }   Value { string tag = 1; float simple_value = 2; }
// The first record of a file is Event{wall_time, file_version: "brain.Event:2"}; every scalar is an
// Event{wall_time, step, summary{value{tag, simple_value}}}, as torch.utils.tensorboard writes them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gptrain::metrics::tfevent {

// Protobuf wire format pieces (little-endian fixed widths, base-128 varints).
void put_varint(std::string& out, uint64_t v);
void put_key(std::string& out, uint32_t field,
             uint32_t wire_type);  // wire types: 0 varint, 1 fixed64, 2 bytes, 5 fixed32
void put_fixed32(std::string& out, uint32_t v);
void put_fixed64(std::string& out, uint64_t v);

std::string encode_file_version_event(double wall_time);
std::string encode_scalar_event(double wall_time, int64_t step, std::string_view tag, float value);

// One TFRecord around `data`.
std::string frame_record(std::string_view data);

}  // namespace gptrain::metrics::tfevent
