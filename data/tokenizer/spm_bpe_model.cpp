// Native SentencePiece BPE: model tables, normalization and the merge loop. See spm_bpe_model.h.
#include "data/tokenizer/spm_bpe_model.h"

#include "data/tokenizer/bpe_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace gptrain {

namespace {

constexpr std::string_view kSpaceSymbol = "\xe2\x96\x81";  // U+2581
constexpr std::string_view kReplacement = "\xef\xbf\xbd";  // U+FFFD

// Length of the valid UTF-8 character at the front of s (no overlong forms, surrogates or code points
// past U+10FFFF), or 0 when s does not start with one.
size_t valid_utf8_length(std::string_view s) {
  const auto at = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const auto cont = [&](size_t k, unsigned lo = 0x80, unsigned hi = 0xbf) {
    return k < s.size() && at(k) >= lo && at(k) <= hi;
  };
  const unsigned b = at(0);
  if (b < 0x80) return 1;
  if (b >= 0xc2 && b <= 0xdf) return cont(1) ? 2 : 0;
  if (b >= 0xe0 && b <= 0xef) {
    const bool second = b == 0xe0 ? cont(1, 0xa0) : b == 0xed ? cont(1, 0x80, 0x9f) : cont(1);
    return second && cont(2) ? 3 : 0;
  }
  if (b >= 0xf0 && b <= 0xf4) {
    const bool second = b == 0xf0 ? cont(1, 0x90) : b == 0xf4 ? cont(1, 0x80, 0x8f) : cont(1);
    return second && cont(2) && cont(3) ? 4 : 0;
  }
  return 0;
}

// Bytes of the character whose (valid) UTF-8 starts with lead byte b.
uint32_t char_length(unsigned char b) { return b < 0xc0 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4; }

std::string why_not_native(const SentencePieceModelSpec& m) {
  using S = SentencePieceModelSpec;
  if (m.model_type != S::kBpe) return "not a BPE model";
  if (!m.byte_fallback) return "no byte fallback";
  if (m.has_charsmap) return fmt::format("normalization rules ({})", m.normalizer_name);
  if (m.treat_whitespace_as_suffix) return "treat_whitespace_as_suffix";
  if (!m.pretokenization_delimiter.empty()) return "a pretokenization delimiter";
  for (const S::Piece& p : m.pieces) {
    // The normalizer would treat a space inside a user-defined piece unlike a plain space.
    if (p.type == S::kUserDefined && p.text.find(' ') != std::string::npos)
      return fmt::format("a user-defined piece with a space ({})", p.text);
    if (p.type == S::kUnused) return fmt::format("an unused piece ({})", p.text);
    if (p.type < S::kNormal || p.type > S::kByte) return fmt::format("piece {} has unknown type {}", p.text, p.type);
    if (p.text.empty()) return "an empty piece";
  }
  return {};
}

}  // namespace

std::shared_ptr<const SpmBpeModel> SpmBpeModel::build(const SentencePieceModelSpec& spec, std::string& why) {
  why = why_not_native(spec);
  if (!why.empty()) return nullptr;
  auto m = std::shared_ptr<SpmBpeModel>(new SpmBpeModel());
  const size_t n = spec.pieces.size();
  size_t slots = 64;
  while (slots < n * 2) slots *= 2;
  m->slots_.assign(slots, Slot{0, 0, 0, -1});
  m->mask_ = slots - 1;
  std::fill(std::begin(m->byte_id_), std::end(m->byte_id_), -1);
  for (size_t id = 0; id < n; ++id) {
    const SentencePieceModelSpec::Piece& p = spec.pieces[id];
    if (m->find(p.text) >= 0) {
      why = fmt::format("piece {} appears twice", p.text);
      return nullptr;
    }
    const uint64_t h = BpeCache::hash(p.text);
    size_t slot = h & m->mask_;
    while (m->slots_[slot].id >= 0) slot = (slot + 1) & m->mask_;
    m->slots_[slot] = {h, static_cast<uint32_t>(m->text_.size()), static_cast<uint32_t>(p.text.size()),
                       static_cast<int32_t>(id)};
    m->text_ += p.text;
    m->score_.push_back(p.score);
    m->type_.push_back(static_cast<uint8_t>(p.type));
    unsigned byte = 0;  // byte fallback looks up "<0xNN>" spelled with upper-case hex digits
    if (p.type == SentencePieceModelSpec::kByte && std::sscanf(p.text.c_str(), "<0x%2X>", &byte) == 1 && byte < 256 &&
        p.text == fmt::format("<0x{:02X}>", byte))
      m->byte_id_[byte] = static_cast<int32_t>(id);
    if (p.type == SentencePieceModelSpec::kNormal || p.type == SentencePieceModelSpec::kUserDefined)
      m->mark_joined(p.text);
    if (p.type == SentencePieceModelSpec::kUserDefined)
      m->user_defined_[static_cast<unsigned char>(p.text[0])].push_back(p.text);
  }
  for (int b = 0; b < 256; ++b)
    if (m->byte_id_[b] < 0) {
      why = fmt::format("no byte piece <0x{:02X}>", b);
      return nullptr;
    }
  m->add_dummy_prefix_ = spec.add_dummy_prefix;
  m->remove_extra_whitespaces_ = spec.remove_extra_whitespaces;
  m->escape_whitespaces_ = spec.escape_whitespaces;
  return m;
}

void SpmBpeModel::mark_joined(std::string_view piece) {
  for (size_t k = 1; k < piece.size(); ++k) {
    const auto a = static_cast<unsigned char>(piece[k - 1]), b = static_cast<unsigned char>(piece[k]);
    if ((b & 0xc0) != 0x80) joined_[a][b >> 6] |= uint64_t{1} << (b & 63);  // b starts a character
  }
}

uint32_t SpmBpeModel::user_defined_at(std::string_view text) const {
  size_t longest = 0;
  for (const std::string& u : user_defined_[static_cast<unsigned char>(text[0])])
    if (u.size() > longest && text.substr(0, u.size()) == u) longest = u.size();
  return static_cast<uint32_t>(longest);
}

int32_t SpmBpeModel::find(std::string_view bytes) const {
  const uint64_t h = BpeCache::hash(bytes);
  for (size_t slot = h & mask_;; slot = (slot + 1) & mask_) {
    const Slot& s = slots_[slot];
    if (s.id < 0) return -1;
    if (s.hash == h && s.len == bytes.size() && text_.compare(s.offset, s.len, bytes) == 0) return s.id;
  }
}

void SpmBpeModel::normalize(std::string_view text, std::string& out) const {
  out.clear();
  size_t i = 0;
  if (remove_extra_whitespaces_)
    while (i < text.size() && text[i] == ' ') ++i;
  if (i == text.size()) return;  // empty, or only spaces that are dropped: no dummy prefix either
  const std::string_view space = escape_whitespaces_ ? kSpaceSymbol : std::string_view(" ");
  if (add_dummy_prefix_) out += space;
  bool prev_space = remove_extra_whitespaces_;
  while (i < text.size()) {
    const size_t len = valid_utf8_length(text.substr(i));
    if (len == 1 && text[i] == ' ') {
      if (!prev_space) out += space;
      prev_space = remove_extra_whitespaces_;
    } else {
      out += len ? text.substr(i, len) : kReplacement;  // an invalid byte is one U+FFFD
      prev_space = false;
    }
    i += len ? len : 1;
  }
  if (remove_extra_whitespaces_)
    while (out.size() >= space.size() && out.compare(out.size() - space.size(), space.size(), space) == 0)
      out.resize(out.size() - space.size());
}

void SpmBpeModel::add_symbol_ids(std::string_view piece, std::vector<int32_t>& out) const {
  const int32_t id = find(piece);
  if (id >= 0 && type_[id] != SentencePieceModelSpec::kUnknown) {
    out.push_back(id);
    return;
  }
  for (char c : piece) out.push_back(byte_id_[static_cast<unsigned char>(c)]);
}

namespace {
// Heap order: the highest score on top, at equal scores the leftmost.
bool lower_priority(const SpmBpeModel::Scratch::Pair& a, const SpmBpeModel::Scratch::Pair& b) {
  return a.score < b.score || (a.score == b.score && a.left > b.left);
}
}  // namespace

void SpmBpeModel::maybe_push_pair(std::string_view text, Scratch& s, int32_t left, int32_t right) const {
  if (left < 0 || right < 0 || s.symbols[left].frozen || s.symbols[right].frozen) return;
  const Scratch::Symbol& l = s.symbols[left];
  const uint32_t len = l.len + s.symbols[right].len;
  const int32_t id = find(text.substr(l.start, len));
  if (id < 0 || type_[id] != SentencePieceModelSpec::kNormal) return;
  s.heap.push_back({score_[id], left, right, len});
  std::push_heap(s.heap.begin(), s.heap.end(), lower_priority);
}

void SpmBpeModel::encode_normalized(std::string_view text, Scratch& s, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  s.symbols.clear();
  s.heap.clear();
  for (uint32_t i = 0; i < text.size();) {
    // A user-defined piece (the longest that starts here) is one symbol that never merges.
    const uint32_t user = user_defined_at(text.substr(i));
    const uint32_t len = user ? user
                              : std::min<uint32_t>(char_length(static_cast<unsigned char>(text[i])),
                                                   static_cast<uint32_t>(text.size()) - i);
    const auto index = static_cast<int32_t>(s.symbols.size());
    s.symbols.push_back({i, len, index - 1, index + 1, user > 0});
    i += len;
  }
  s.symbols.back().next = -1;
  for (int32_t i = 1; i < static_cast<int32_t>(s.symbols.size()); ++i) maybe_push_pair(text, s, i - 1, i);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), lower_priority);
    const Scratch::Pair top = s.heap.back();
    s.heap.pop_back();
    Scratch::Symbol& l = s.symbols[top.left];
    Scratch::Symbol& r = s.symbols[top.right];
    // Stale: one side was merged away or grew since this pair was queued.
    if (l.len == 0 || r.len == 0 || l.len + r.len != top.len) continue;
    l.len = top.len;
    l.next = r.next;
    if (r.next >= 0) s.symbols[r.next].prev = top.left;
    r.len = 0;
    maybe_push_pair(text, s, l.prev, top.left);
    maybe_push_pair(text, s, top.left, l.next);
  }
  for (int32_t i = 0; i >= 0; i = s.symbols[i].next)
    add_symbol_ids(text.substr(s.symbols[i].start, s.symbols[i].len), out);
}

}  // namespace gptrain
