// SentencePiece-family steps of HuggingFaceTokenizer; see hf_sentencepiece.h.
#include "data/tokenizer/hf_sentencepiece.h"

#include "core/common/error.h"
#include "data/tokenizer/nfc.h"
#include "data/tokenizer/unicode_tables.h"

#include <limits>

namespace gptrain {

namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty() || s.find(from) == std::string::npos) return;
  std::string r;
  r.reserve(s.size());
  for (size_t pos = 0;;) {
    const size_t hit = s.find(from, pos);
    r.append(s, pos, hit == std::string::npos ? std::string::npos : hit - pos);
    if (hit == std::string::npos) break;
    r.append(to);
    pos = hit + from.size();
  }
  s.swap(r);
}

// Byte length of the UTF-8 character at s[i] (1 for a byte that does not start a valid one).
int char_len(std::string_view s, size_t i) {
  uint32_t cp;
  return unicode::decode_utf8(reinterpret_cast<const unsigned char*>(s.data()), i, s.size(), cp);
}

// The byte of a <0xNN> token, or -1.
int fallback_byte(std::string_view tok) {
  if (tok.size() != 6 || tok.substr(0, 3) != "<0x" || tok[5] != '>') return -1;
  auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  const int hi = hex(tok[3]), lo = hex(tok[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

}  // namespace

void hf_normalize(const std::vector<HfNormalizerStep>& steps, std::string_view in, std::string& out) {
  out.assign(in);
  for (const HfNormalizerStep& s : steps) {
    if (s.kind == HfNormalizerStep::kPrepend) {
      if (!out.empty()) out.insert(0, s.text);
    } else if (s.kind == HfNormalizerStep::kNfc) {
      std::string composed;
      unicode::nfc(out, composed);
      out.swap(composed);
    } else {
      replace_all(out, s.from, s.text);
    }
  }
}

void metaspace_pretokenize(const HfMetaspace& m, std::string_view text, bool at_start, std::string& out,
                           std::vector<TextPiece>& pieces) {
  out.assign(text);
  replace_all(out, " ", m.replacement);
  const bool prepend = m.prepend == HfMetaspace::kAlways || (m.prepend == HfMetaspace::kFirst && at_start);
  if (prepend && !out.starts_with(m.replacement)) out.insert(0, m.replacement);
  check(out.size() < std::numeric_limits<uint32_t>::max(), "pre-tokenizer: text of {} bytes is over 4 GiB", out.size());
  pieces.clear();
  size_t begin = 0;
  if (m.split)
    for (size_t hit = out.find(m.replacement, 1); hit != std::string::npos; hit = out.find(m.replacement, hit + 1)) {
      pieces.push_back({static_cast<uint32_t>(begin), static_cast<uint32_t>(hit)});
      begin = hit;
    }
  if (begin < out.size()) pieces.push_back({static_cast<uint32_t>(begin), static_cast<uint32_t>(out.size())});
}

void hf_char_symbols(const HfTokenizerTables& t, std::string_view word, std::vector<int32_t>& sym) {
  sym.clear();
  bool unk_pending = false;
  std::string ch;
  for (size_t i = 0; i < word.size();) {
    const int len = char_len(word, i);
    ch.assign(word.substr(i, static_cast<size_t>(len)));
    i += static_cast<size_t>(len);
    const auto it = t.char_vocab.find(ch);
    if (it != t.char_vocab.end()) {
      if (unk_pending) sym.push_back(t.unk_id);
      unk_pending = false;
      sym.push_back(it->second);
    } else if (t.byte_fallback) {  // every <0xNN> exists (checked at load), so no unknown token is pending
      for (unsigned char b : ch) sym.push_back(t.byte_fallback_ids[b]);
    } else {
      check(t.unk_id >= 0, "{}: a character ({} bytes) is not in the vocabulary and the model has no unk_token", t.path,
            ch.size());
      if (unk_pending && !t.fuse_unk) sym.push_back(t.unk_id);
      unk_pending = true;
    }
  }
  if (unk_pending) sym.push_back(t.unk_id);
}

std::string hf_decode_chain(const std::vector<HfDecoderStep>& steps, std::vector<std::string> tokens) {
  for (const HfDecoderStep& s : steps) {
    switch (s.kind) {
      case HfDecoderStep::kReplace:
        for (std::string& tok : tokens) replace_all(tok, s.from, s.text);
        break;
      case HfDecoderStep::kByteFallback: {  // consecutive <0xNN> tokens become one token of their bytes
        std::vector<std::string> merged;
        bool in_bytes = false;
        for (std::string& tok : tokens) {
          const int b = fallback_byte(tok);
          if (b < 0) {
            merged.push_back(std::move(tok));
            in_bytes = false;
            continue;
          }
          if (!in_bytes) merged.emplace_back();
          merged.back().push_back(static_cast<char>(b));
          in_bytes = true;
        }
        tokens.swap(merged);
        break;
      }
      case HfDecoderStep::kFuse: {
        std::string all;
        for (const std::string& tok : tokens) all += tok;
        tokens.assign(1, all);
        break;
      }
      case HfDecoderStep::kStrip:
        for (std::string& tok : tokens) {
          size_t begin = 0, end = tok.size();
          for (int k = 0; k < s.start && tok.compare(begin, s.text.size(), s.text) == 0; ++k) begin += s.text.size();
          for (int k = 0; k < s.stop && end >= begin + s.text.size() &&
                          tok.compare(end - s.text.size(), s.text.size(), s.text) == 0;
               ++k)
            end -= s.text.size();
          tok = tok.substr(begin, end - begin);
        }
        break;
      case HfDecoderStep::kMetaspace:  // the first token loses its replacements, the others get spaces
        for (size_t i = 0; i < tokens.size(); ++i) replace_all(tokens[i], s.from, i == 0 && s.prepend ? "" : " ");
        break;
    }
  }
  std::string out;
  for (const std::string& tok : tokens) out += tok;
  return out;
}

}  // namespace gptrain
