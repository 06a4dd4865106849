// TikTokenizer: special tokens first in the ids, split pattern, rank BPE with a piece cache. See
// tiktoken_tokenizer.h.
#include "data/tokenizer/tiktoken_tokenizer.h"

#include "core/common/error.h"
#include "data/tokenizer/added_token_matcher.h"
#include "data/tokenizer/bpe_cache.h"
#include "data/tokenizer/rank_bpe.h"
#include "data/tokenizer/tiktoken_vocab_file.h"

#include <algorithm>
#include <unordered_set>

namespace gptrain {

namespace {

constexpr size_t kCacheCapacity = 1 << 16;

// Megatron's default named special tokens; a custom list must contain all of them.
const std::vector<std::string> kRequiredSpecials = {"<unk>", "<s>", "</s>", "<mask>", "<pad>", "<cls>", "<sep>"};

std::vector<std::string> special_token_list(const TikTokenizerOptions& o) {
  const std::vector<std::string> named = o.special_tokens.value_or(kRequiredSpecials);
  std::unordered_set<std::string> seen;
  for (const std::string& t : named) {
    check(!t.empty(), "--tokenizer-special-tokens: an empty token");
    check(seen.insert(t).second, "--tokenizer-special-tokens: {} is listed twice (they must be unique)", t);
  }
  for (const std::string& t : kRequiredSpecials)
    check(seen.count(t) != 0,
          "--tokenizer-special-tokens: {} is missing; TikTokenizer's list must include <unk> <s> </s> <mask> <pad> "
          "<cls> <sep> (Megatron's)",
          t);
  check(static_cast<int64_t>(named.size()) <= o.num_special_tokens && o.num_special_tokens < o.vocab_size,
        "TikTokenizer needs {} named special tokens <= --tiktoken-num-special-tokens {} < --vocab-size {}",
        named.size(), o.num_special_tokens, o.vocab_size);
  std::vector<std::string> all = named;
  for (int64_t k = static_cast<int64_t>(named.size()); k < o.num_special_tokens; ++k)
    all.push_back("<SPECIAL_" + std::to_string(k) + ">");
  check(static_cast<int64_t>(std::unordered_set<std::string>(all.begin(), all.end()).size()) == o.num_special_tokens,
        "--tokenizer-special-tokens: a named token equals one of the fillers <SPECIAL_k>");
  return all;
}

}  // namespace

struct TikTokenizer::Shared {
  TiktokenPattern pattern;
  std::vector<std::string> specials;  // (S,) id = position
  size_t named_specials;
  AddedTokenMatcher special_matcher;
  RankBpe bpe;
  int32_t eod, bos;

  Shared(const TikTokenizerOptions& o, std::vector<std::string> all_specials)
      : pattern(o.pattern),
        specials(std::move(all_specials)),
        named_specials(o.special_tokens ? o.special_tokens->size() : kRequiredSpecials.size()),
        bpe(read_tiktoken_vocab(o.path, o.vocab_size - o.num_special_tokens),
            static_cast<int32_t>(o.num_special_tokens)) {
    for (size_t id = 0; id < specials.size(); ++id) special_matcher.add(specials[id], static_cast<int32_t>(id));
    special_matcher.finish();
    auto id_of = [&](const char* t) {
      return static_cast<int32_t>(std::find(specials.begin(), specials.end(), t) - specials.begin());
    };
    eod = id_of("</s>");
    bos = id_of("<s>");
  }
};

TikTokenizer::TikTokenizer(const TikTokenizerOptions& o) : cache_(std::make_unique<BpeCache>(kCacheCapacity)) {
  check(o.vocab_size > 0 && o.vocab_size < INT32_MAX, "--vocab-size {}: expected a positive 32-bit count",
        o.vocab_size);
  check(o.num_special_tokens >= 0, "--tiktoken-num-special-tokens {}: expected 0 or more", o.num_special_tokens);
  shared_ = std::make_shared<const Shared>(o, special_token_list(o));
}

TikTokenizer::TikTokenizer(const TikTokenizer& other)
    : Tokenizer(other), shared_(other.shared_), cache_(std::make_unique<BpeCache>(kCacheCapacity)) {}

TikTokenizer::~TikTokenizer() = default;

int32_t TikTokenizer::vocab_size() const {
  return static_cast<int32_t>(shared_->specials.size()) + shared_->bpe.size();
}
int32_t TikTokenizer::eod_id() const { return shared_->eod; }
std::optional<int32_t> TikTokenizer::bos_id() const { return shared_->bos; }

std::vector<SpecialToken> TikTokenizer::special_tokens() const {
  std::vector<SpecialToken> out;
  for (size_t id = 0; id < shared_->named_specials; ++id)
    out.push_back({shared_->specials[id], static_cast<int32_t>(id)});
  return out;
}

TiktokenPattern TikTokenizer::pattern() const { return shared_->pattern; }
const std::vector<std::string>& TikTokenizer::all_special_tokens() const { return shared_->specials; }
const RankBpe& TikTokenizer::ranks() const { return shared_->bpe; }

void TikTokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  size_t pos = 0, len = 0;
  int32_t id = -1;
  for (size_t hit; (hit = shared_->special_matcher.find(text, pos, len, id)) != std::string_view::npos;
       pos = hit + len) {
    encode_ordinary(text.substr(pos, hit - pos), out);
    out.push_back(id);
  }
  encode_ordinary(text.substr(pos), out);
}

void TikTokenizer::encode_ordinary(std::string_view text, std::vector<int32_t>& out) {
  if (text.empty()) return;
  thread_local std::vector<TextPiece> pieces;
  tiktoken_pretokenize(text, shared_->pattern, pieces);
  const RankBpe& bpe = shared_->bpe;
  for (const TextPiece& p : pieces)
    cache_->encode_cached(text.substr(p.begin, p.end - p.begin), out,
                          [&](std::string_view piece, std::vector<int32_t>& o) { bpe.encode_piece(piece, o); });
}

std::string TikTokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  const auto S = static_cast<int32_t>(shared_->specials.size());
  for (int32_t id : ids) {
    check(id >= 0 && id < vocab_size(), "token id {} out of range [0, {})", id, vocab_size());
    out += id < S ? std::string_view(shared_->specials[id]) : shared_->bpe.rank_bytes(id - S);
  }
  return out;
}

}  // namespace gptrain
