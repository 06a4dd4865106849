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

bool parse_piece(std::string_view bytes, SentencePieceModelSpec::Piece& piece) {
  WireReader r(bytes);
  uint32_t field, wire;
  while (!r.done() && r.next(field, wire)) {
    bool ok = true;
    if (field == 1)
      ok = read_string(r, wire, piece.text);
    else if (field == 2)
      ok = wire == 5 && r.fixed32(piece.score);
    else if (field == 3)
      ok = read_int(r, wire, piece.type);
    else
      ok = r.skip(wire);
    if (!ok) return false;
  }
  return !r.bad();
}

bool parse_trainer_spec(std::string_view bytes, SentencePieceModelSpec& m) {
  WireReader r(bytes);
  uint32_t field, wire;
  while (!r.done() && r.next(field, wire)) {
    bool ok = true;
    if (field == 3)
      ok = read_int(r, wire, m.model_type);
    else if (field == 24)
      ok = read_bool(r, wire, m.treat_whitespace_as_suffix);
    else if (field == 35)
      ok = read_bool(r, wire, m.byte_fallback);
    else if (field == 53)
      ok = read_string(r, wire, m.pretokenization_delimiter);
    else
      ok = r.skip(wire);
    if (!ok) return false;
  }
  return !r.bad();
}

bool parse_normalizer_spec(std::string_view bytes, SentencePieceModelSpec& m) {
  WireReader r(bytes);
  uint32_t field, wire;
  std::string charsmap;
  while (!r.done() && r.next(field, wire)) {
    bool ok = true;
    if (field == 1)
      ok = read_string(r, wire, m.normalizer_name);
    else if (field == 2)
      ok = read_string(r, wire, charsmap);
    else if (field == 3)
      ok = read_bool(r, wire, m.add_dummy_prefix);
    else if (field == 4)
      ok = read_bool(r, wire, m.remove_extra_whitespaces);
    else if (field == 5)
      ok = read_bool(r, wire, m.escape_whitespaces);
    else
      ok = r.skip(wire);
    if (!ok) return false;
  }
  m.has_charsmap = !charsmap.empty();
  return !r.bad();
}

}  // namespace

bool parse_sentencepiece_model(std::string_view bytes, SentencePieceModelSpec& out) {
  out = SentencePieceModelSpec{};
  WireReader r(bytes);
  uint32_t field, wire;
  std::string_view sub;
  while (!r.done() && r.next(field, wire)) {
    if (field >= 1 && field <= 3) {
      if (wire != 2 || !r.bytes(sub)) return false;
      bool ok = true;
      if (field == 1)
        ok = parse_piece(sub, out.pieces.emplace_back());
      else if (field == 2)
        ok = parse_trainer_spec(sub, out);
      else
        ok = parse_normalizer_spec(sub, out);
      if (!ok) return false;
    } else if (!r.skip(wire)) {
      return false;
    }
  }
  return !r.bad();
}

}  // namespace gptrain
