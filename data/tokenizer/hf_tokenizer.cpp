// HuggingFaceTokenizer: added-token split, prefix space, split regex, cached BPE, template. See
// hf_tokenizer.h.
#include "data/tokenizer/hf_tokenizer.h"

#include "core/common/error.h"
#include "data/tokenizer/added_token_matcher.h"
#include "data/tokenizer/bpe_cache.h"
#include "data/tokenizer/bpe_model.h"
#include "data/tokenizer/hf_sentencepiece.h"
#include "data/tokenizer/hf_tokenizer_json.h"
#include "data/tokenizer/llama3_pretokenizer.h"
#include "data/tokenizer/tiktoken_pretokenizer.h"

namespace gptrain {

namespace {

constexpr size_t kCacheCapacity = 1 << 16;

}  // namespace

struct HuggingFaceTokenizer::Shared {
  HfTokenizerTables tables;
  BpeModel model;
  AddedTokenMatcher raw_added, normalized_added;  // normalized false / true
  explicit Shared(HfTokenizerTables t)
      : tables(std::move(t)), model(tables.tokens, tables.byte_tokens, tables.merges, tables.eod_id) {
    for (const HfAddedToken& a : tables.added) (a.normalized ? normalized_added : raw_added).add(a.content, a.id);
    raw_added.finish();
    normalized_added.finish();
  }
};

HuggingFaceTokenizer::HuggingFaceTokenizer(const std::string& file_or_dir)
    : shared_(std::make_shared<const Shared>(load_hf_tokenizer_json(file_or_dir))),
      cache_(std::make_unique<BpeCache>(kCacheCapacity)) {}

HuggingFaceTokenizer::HuggingFaceTokenizer(const HuggingFaceTokenizer& other)
    : Tokenizer(other), shared_(other.shared_), cache_(std::make_unique<BpeCache>(kCacheCapacity)) {}

HuggingFaceTokenizer::~HuggingFaceTokenizer() = default;

int32_t HuggingFaceTokenizer::vocab_size() const { return shared_->model.vocab_size(); }
int32_t HuggingFaceTokenizer::eod_id() const { return shared_->tables.eod_id; }
std::optional<int32_t> HuggingFaceTokenizer::bos_id() const { return shared_->tables.bos_id; }
const std::string& HuggingFaceTokenizer::path() const { return shared_->tables.path; }

std::vector<SpecialToken> HuggingFaceTokenizer::special_tokens() const {
  std::vector<SpecialToken> out;
  for (const HfAddedToken& a : shared_->tables.added)
    if (a.special) out.push_back({a.content, a.id});
  return out;
}

void HuggingFaceTokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  const HfTokenizerTables& t = shared_->tables;
  out.insert(out.end(), t.prefix_ids.begin(), t.prefix_ids.end());
  encode_added(text, false, true, out);
  out.insert(out.end(), t.suffix_ids.begin(), t.suffix_ids.end());
}

// Cuts the added tokens of one group out of text; the stretches between are normalized and go to the
// next group, then to the pre-tokenizer. at_start: text begins the input (Metaspace's prepend "first").
void HuggingFaceTokenizer::encode_added(std::string_view text, bool normalized_group, bool at_start,
                                        std::vector<int32_t>& out) {
  const AddedTokenMatcher& m = normalized_group ? shared_->normalized_added : shared_->raw_added;
  const std::vector<HfNormalizerStep>& normalizers = shared_->tables.normalizers;
  auto next = [&](std::string_view part, bool part_at_start) {
    if (part.empty()) return;
    if (normalized_group) {
      encode_stretch(part, part_at_start, out);
    } else if (normalizers.empty()) {
      encode_added(part, true, part_at_start, out);
    } else {
      std::string normalized;
      hf_normalize(normalizers, part, normalized);
      encode_added(normalized, true, part_at_start, out);
    }
  };
  size_t pos = 0;
  if (!m.empty()) {
    size_t len = 0;
    int32_t id = -1;
    for (size_t hit; (hit = m.find(text, pos, len, id)) != std::string_view::npos; pos = hit + len) {
      next(text.substr(pos, hit - pos), at_start && pos == 0);
      out.push_back(id);
    }
  }
  next(text.substr(pos), at_start && pos == 0);
}

void HuggingFaceTokenizer::encode_stretch(std::string_view text, bool at_start, std::vector<int32_t>& out) {
  const HfTokenizerTables& t = shared_->tables;
  if (!t.byte_level) return encode_words(text, at_start, out);
  if (t.add_prefix_space && text.front() != ' ') {
    prefixed_.assign(1, ' ');
    prefixed_.append(text);
    text = prefixed_;
  }
  thread_local std::vector<TextPiece> pieces;
  switch (t.split) {
    case HfSplitRegex::kNone: pieces.assign(1, TextPiece{0, static_cast<uint32_t>(text.size())}); break;
    case HfSplitRegex::kGpt2: gpt2_pretokenize(text, pieces); break;
    case HfSplitRegex::kLlama3: llama3_pretokenize(text, t.max_digits, pieces); break;
    case HfSplitRegex::kTiktokenV1: tiktoken_pretokenize(text, TiktokenPattern::kV1, pieces); break;
    case HfSplitRegex::kTiktokenV2: tiktoken_pretokenize(text, TiktokenPattern::kV2, pieces); break;
  }
  for (const TextPiece& p : pieces)
    cache_->encode_cached(text.substr(p.begin, p.end - p.begin), out,
                          [&](std::string_view piece, std::vector<int32_t>& o) {
                            if (!encode_whole(piece, o)) shared_->model.encode_piece(piece, o);
                          });
}

// The SentencePiece family: Metaspace (or the whole stretch as one word), then character-level BPE.
void HuggingFaceTokenizer::encode_words(std::string_view text, bool at_start, std::vector<int32_t>& out) {
  const HfTokenizerTables& t = shared_->tables;
  thread_local std::vector<TextPiece> pieces;
  if (t.metaspace) {
    metaspace_pretokenize(*t.metaspace, text, at_start, prefixed_, pieces);
    text = prefixed_;
  } else {
    pieces.assign(1, TextPiece{0, static_cast<uint32_t>(text.size())});
  }
  thread_local std::vector<int32_t> sym;
  for (const TextPiece& p : pieces)
    cache_->encode_cached(text.substr(p.begin, p.end - p.begin), out,
                          [&](std::string_view word, std::vector<int32_t>& o) {
                            if (encode_whole(word, o)) return;
                            hf_char_symbols(t, word, sym);
                            shared_->model.encode_symbols(sym, o);
                          });
}

// ignore_merges: a piece that is itself in the model's vocabulary is that one token.
bool HuggingFaceTokenizer::encode_whole(std::string_view piece, std::vector<int32_t>& out) const {
  const HfTokenizerTables& t = shared_->tables;
  if (!t.ignore_merges) return false;
  const auto whole = t.model_vocab.find(std::string(piece));
  if (whole == t.model_vocab.end()) return false;
  out.push_back(whole->second);
  return true;
}

std::string HuggingFaceTokenizer::decode(std::span<const int32_t> ids) const {
  const HfTokenizerTables& t = shared_->tables;
  for (int32_t id : ids) check(id >= 0 && id < vocab_size(), "token id {} out of range [0, {})", id, vocab_size());
  if (!t.byte_level) {
    std::vector<std::string> tokens;
    for (int32_t id : ids) tokens.emplace_back(shared_->model.token_bytes(id));
    return hf_decode_chain(t.decoders, std::move(tokens));
  }
  std::string out;
  for (int32_t id : ids) out += shared_->model.token_bytes(id);
  return out;
}

}  // namespace gptrain
