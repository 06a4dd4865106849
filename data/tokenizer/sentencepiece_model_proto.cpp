// Protobuf wire-format reader for the ModelProto fields in SentencePieceModelSpec.
#include "data/tokenizer/sentencepiece_model_proto.h"

#include <cstring>

namespace gptrain {

namespace {

// One message's fields in order: varints, 32-bit and length-delimited values (groups are not used by
// ModelProto and count as malformed).
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : p_(bytes) {}
  bool done() const { return p_.empty() || bad_; }
  bool bad() const { return bad_; }

  // Next field: its number and wire type; value read with one of the accessors below (or skip()).
  bool next(uint32_t& field, uint32_t& wire) {
    uint64_t key = 0;
    if (!varint(key)) return false;
    field = static_cast<uint32_t>(key >> 3);
    wire = static_cast<uint32_t>(key & 7);
    return true;
  }
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_.empty()) return fail();
      const auto b = static_cast<unsigned char>(p_[0]);
      p_.remove_prefix(1);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return fail();
  }
  bool bytes(std::string_view& v) {
    uint64_t n = 0;
    if (!varint(n) || n > p_.size()) return fail();
    v = p_.substr(0, n);
    p_.remove_prefix(n);
    return true;
  }
  bool fixed32(float& v) {
    if (p_.size() < 4) return fail();
    std::memcpy(&v, p_.data(), 4);  // little-endian on every supported host
    p_.remove_prefix(4);
    return true;
  }
  bool skip(uint32_t wire) {
    uint64_t u;
    std::string_view s;
    switch (wire) {
      case 0: return varint(u);
      case 1: return advance(8);
      case 2: return bytes(s);
      case 5: return advance(4);
      default: return fail();
    }
  }

 private:
  bool advance(size_t n) {
    if (p_.size() < n) return fail();
    p_.remove_prefix(n);
    return true;
  }
  bool fail() {
    bad_ = true;
    return false;
  }
  std::string_view p_;
  bool bad_ = false;
};

// Reads a bool/enum varint into v, or a length-delimited string into s, as the wire type says; false on a
// wire type the field cannot have.
bool read_int(WireReader& r, uint32_t wire, int& v) {
  uint64_t u = 0;
  if (wire != 0 || !r.varint(u)) return false;
  v = static_cast<int>(u);
  return true;
}
bool read_bool(WireReader& r, uint32_t wire, bool& v) {
  int i = 0;
  if (!read_int(r, wire, i)) return false;
  v = i != 0;
  return true;
}
bool read_string(WireReader& r, uint32_t wire, std::string& v) {
  std::string_view s;
  if (wire != 2 || !r.bytes(s)) return false;
  v.assign(s);
  return true;
}

// Calls on_field(reader, field number, wire type) for each field of the message in bytes; on_field reads
// or skips the value and returns false on one it cannot take.
template <class OnField>
bool each_field(std::string_view bytes, OnField&& on_field) {
  WireReader r(bytes);
  uint32_t field, wire;
  while (!r.done() && r.next(field, wire))
    if (!on_field(r, field, wire)) return false;
  return !r.bad();
}

bool parse_piece(std::string_view bytes, SentencePieceModelSpec::Piece& piece) {
  return each_field(bytes, [&](WireReader& r, uint32_t field, uint32_t wire) {
    if (field == 1) return read_string(r, wire, piece.text);
    if (field == 2) return wire == 5 && r.fixed32(piece.score);
    if (field == 3) return read_int(r, wire, piece.type);
    return r.skip(wire);
  });
}

bool parse_trainer_spec(std::string_view bytes, SentencePieceModelSpec& m) {
  return each_field(bytes, [&](WireReader& r, uint32_t field, uint32_t wire) {
    if (field == 3) return read_int(r, wire, m.model_type);
    if (field == 24) return read_bool(r, wire, m.treat_whitespace_as_suffix);
    if (field == 35) return read_bool(r, wire, m.byte_fallback);
    if (field == 53) return read_string(r, wire, m.pretokenization_delimiter);
    return r.skip(wire);
  });
}

bool parse_normalizer_spec(std::string_view bytes, SentencePieceModelSpec& m) {
  std::string charsmap;
  const bool ok = each_field(bytes, [&](WireReader& r, uint32_t field, uint32_t wire) {
    if (field == 1) return read_string(r, wire, m.normalizer_name);
    if (field == 2) return read_string(r, wire, charsmap);
    if (field == 3) return read_bool(r, wire, m.add_dummy_prefix);
    if (field == 4) return read_bool(r, wire, m.remove_extra_whitespaces);
    if (field == 5) return read_bool(r, wire, m.escape_whitespaces);
    return r.skip(wire);
  });
  m.has_charsmap = !charsmap.empty();
  return ok;
}

}  // namespace

bool parse_sentencepiece_model(std::string_view bytes, SentencePieceModelSpec& out) {
  out = SentencePieceModelSpec{};
  return each_field(bytes, [&](WireReader& r, uint32_t field, uint32_t wire) {
    std::string_view sub;
    if (field < 1 || field > 3) return r.skip(wire);
    if (wire != 2 || !r.bytes(sub)) return false;
    if (field == 1) return parse_piece(sub, out.pieces.emplace_back());
    if (field == 2) return parse_trainer_spec(sub, out);
    return parse_normalizer_spec(sub, out);
  });
}

}  // namespace gptrain
