// Recursive-descent JSON validator/extractor; grammar of RFC 8259. See json_fields.h.
#include "data/jsonl/json_fields.h"

#include "data/tokenizer/unicode_tables.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>

namespace gptrain {

namespace {

constexpr int kMaxDepth = 512;

struct ParseError {
  size_t at;
  const char* what;
};

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  void ws() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
      ++i_;
    }
  }
  bool at_end() const { return i_ >= s_.size(); }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  size_t pos() const { return i_; }
  [[noreturn]] void error(const char* what) const { throw ParseError{i_, what}; }
  void expect(char c, const char* what) {
    if (peek() != c || at_end()) error(what);
    ++i_;
  }

  // A string at i_ (which holds '"'); appends the decoded bytes to out when out != nullptr.
  void string(std::string* out) {
    ++i_;
    while (true) {
      // Copy the run of plain ASCII bytes at once.
      size_t j = i_;
      while (j < s_.size()) {
        const unsigned char c = static_cast<unsigned char>(s_[j]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++j;
      }
      if (out) out->append(s_.data() + i_, j - i_);
      i_ = j;
      if (i_ >= s_.size()) error("unterminated string");
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return;
      }
      if (c < 0x20) error("control character in string (must be escaped)");
      if (c == '\\') {
        escape(out);
        continue;
      }
      utf8(out);
    }
  }

  // Any value; when skipping (the common case for keys we do not want) nothing is stored.
  void value(int depth) {
    if (depth > kMaxDepth) error("nesting too deep");
    switch (peek()) {
      case '{': object(depth); return;
      case '[': array(depth); return;
      case '"': string(nullptr); return;
      case 't': literal("true"); return;
      case 'f': literal("false"); return;
      case 'n': literal("null"); return;
      default: number(); return;
    }
  }

  static const char* type_at(char c) {
    switch (c) {
      case '{': return "object";
      case '[': return "array";
      case '"': return "string";
      case 't':
      case 'f': return "boolean";
      case 'n': return "null";
      default: return "number";
    }
  }

  void object(int depth) {
    ++i_;
    ws();
    if (peek() == '}') {
      ++i_;
      return;
    }
    while (true) {
      ws();
      if (peek() != '"' || at_end()) error("expected a string key");
      string(nullptr);
      ws();
      expect(':', "expected ':'");
      ws();
      value(depth + 1);
      ws();
      if (peek() == ',' && !at_end()) {
        ++i_;
        continue;
      }
      expect('}', "expected ',' or '}'");
      return;
    }
  }

  void array(int depth) {
    ++i_;
    ws();
    if (peek() == ']') {
      ++i_;
      return;
    }
    while (true) {
      ws();
      value(depth + 1);
      ws();
      if (peek() == ',' && !at_end()) {
        ++i_;
        continue;
      }
      expect(']', "expected ',' or ']'");
      return;
    }
  }

  // The wanted field's value: a string, an array of strings, or anything else (type recorded).
  void field(JsonField& f) {
    f = JsonField{};
    const char c = peek();
    if (c == '"') {
      f.kind = JsonField::kString;
      f.strings.emplace_back();
      string(&f.strings.back());
      return;
    }
    if (c != '[') {
      f.kind = JsonField::kOther;
      f.other_type = type_at(c);
      value(1);
      return;
    }
    f.kind = JsonField::kStringArray;
    ++i_;
    ws();
    if (peek() == ']') {
      ++i_;
      return;
    }
    while (true) {
      ws();
      if (peek() == '"' && f.kind == JsonField::kStringArray) {
        f.strings.emplace_back();
        string(&f.strings.back());
      } else {
        if (f.kind == JsonField::kStringArray) {
          f.kind = JsonField::kOther;
          f.other_type = std::string("array holding a ") + type_at(peek());
        }
        value(2);
      }
      ws();
      if (peek() == ',' && !at_end()) {
        ++i_;
        continue;
      }
      expect(']', "expected ',' or ']'");
      return;
    }
  }

  // The top-level object with the wanted keys extracted.
  void top_object(const std::vector<std::string>& keys, std::vector<JsonField>& fields) {
    ++i_;
    ws();
    if (peek() == '}') {
      ++i_;
      return;
    }
    std::string key;
    while (true) {
      ws();
      if (peek() != '"' || at_end()) error("expected a string key");
      key.clear();
      string(&key);
      ws();
      expect(':', "expected ':'");
      ws();
      size_t k = 0;
      while (k < keys.size() && keys[k] != key) ++k;
      if (k < keys.size())
        field(fields[k]);
      else
        value(1);
      ws();
      if (peek() == ',' && !at_end()) {
        ++i_;
        continue;
      }
      expect('}', "expected ',' or '}'");
      return;
    }
  }

 private:
  void literal(const char* word) {
    const size_t n = std::strlen(word);
    if (s_.compare(i_, n, word) != 0) error("invalid literal");
    i_ += n;
  }

  void number() {
    auto digit = [&] { return i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; };
    if (peek() == '-' && !at_end()) ++i_;
    if (!digit()) error("expected a value");
    if (s_[i_] == '0')
      ++i_;
    else
      while (digit()) ++i_;
    if (peek() == '.' && !at_end()) {
      ++i_;
      if (!digit()) error("expected a digit after '.'");
      while (digit()) ++i_;
    }
    if ((peek() == 'e' || peek() == 'E') && !at_end()) {
      ++i_;
      if ((peek() == '+' || peek() == '-') && !at_end()) ++i_;
      if (!digit()) error("expected a digit in the exponent");
      while (digit()) ++i_;
    }
  }

  unsigned hex4() {
    if (i_ + 4 > s_.size()) error("truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9')
        v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f')
        v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        v |= static_cast<unsigned>(c - 'A' + 10);
      else
        error("invalid hex digit in \\u escape");
    }
    return v;
  }

  void escape(std::string* out) {
    ++i_;
    if (i_ >= s_.size()) error("unterminated escape");
    const char c = s_[i_++];
    char plain = 0;
    switch (c) {
      case '"': plain = '"'; break;
      case '\\': plain = '\\'; break;
      case '/': plain = '/'; break;
      case 'b': plain = '\b'; break;
      case 'f': plain = '\f'; break;
      case 'n': plain = '\n'; break;
      case 'r': plain = '\r'; break;
      case 't': plain = '\t'; break;
      case 'u': {
        uint32_t cp = hex4();
        if (cp >= 0xDC00 && cp <= 0xDFFF) error("lone low surrogate in \\u escape");
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') error("high surrogate without a low one");
          i_ += 2;
          const uint32_t lo = hex4();
          if (lo < 0xDC00 || lo > 0xDFFF) error("high surrogate without a low one");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (out) unicode::append_utf8(cp, *out);
        return;
      }
      default: i_ -= 1; error("invalid escape");
    }
    if (out) out->push_back(plain);
  }

  // One non-ASCII UTF-8 character, validated (shortest form, no surrogates, <= U+10FFFF).
  void utf8(std::string* out) {
    const auto* p = reinterpret_cast<const unsigned char*>(s_.data());
    const unsigned char c = p[i_];
    size_t n;
    uint32_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF)
      n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
      n = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      error("invalid UTF-8 in string");
    }
    if (i_ + n > s_.size()) error("invalid UTF-8 in string");
    if (p[i_ + 1] < lo || p[i_ + 1] > hi) error("invalid UTF-8 in string");
    for (size_t k = 2; k < n; ++k)
      if ((p[i_ + k] & 0xC0) != 0x80) error("invalid UTF-8 in string");
    if (out) out->append(s_.data() + i_, n);
    i_ += n;
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

std::string extract_json_fields(std::string_view line, const std::vector<std::string>& keys,
                                std::vector<JsonField>& fields, std::string& top_type) {
  fields.assign(keys.size(), JsonField{});
  top_type.clear();
  // Editors on Windows start files with a byte-order mark; Megatron's tool (Python's json) refuses it as well.
  if (line.starts_with("\xEF\xBB\xBF"))
    return "at byte 0: a UTF-8 byte-order mark (bytes EF BB BF) precedes the JSON value; remove it, e.g. with "
           "sed -i '1s/^\\xEF\\xBB\\xBF//' on the file";
  Parser p(line);
  try {
    p.ws();
    if (p.at_end()) return "at byte 0: empty line, expected a JSON value";
    const char first = p.peek();
    top_type = Parser::type_at(first);
    if (first == '{')
      p.top_object(keys, fields);
    else
      p.value(0);
    p.ws();
    if (!p.at_end()) return fmt::format("at byte {}: unexpected text after the JSON value", p.pos());
  } catch (const ParseError& e) {
    fields.assign(keys.size(), JsonField{});
    return fmt::format("at byte {}: {}", e.at, e.what);
  }
  if (top_type == "object") return "";
  return "not an object: " + top_type;
}

}  // namespace gptrain
