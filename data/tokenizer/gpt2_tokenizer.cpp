// GPT2Tokenizer: special-token split, pre-tokenizer, cached BPE per piece. See gpt2_tokenizer.h.
#include "data/tokenizer/gpt2_tokenizer.h"

#include "core/common/error.h"
#include "data/tokenizer/bpe_cache.h"
#include "data/tokenizer/bpe_model.h"
#include "data/tokenizer/gpt2_pretokenizer.h"

#include <cstdlib>
#include <filesystem>

namespace gptrain {

namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";
// Pieces longer than this are not cached (rare, and they would crowd the cache).
constexpr size_t kMaxCachedPiece = 256;

// Source tree root: the absolute path the build was configured from (data/CMakeLists.txt defines it; a
// compiler cache may make __FILE__ relative, so it is not used). GPTRAIN_SRC overrides it.
std::filesystem::path source_root() {
  if (const char* env = std::getenv("GPTRAIN_SRC"); env && *env) return env;
  return GPTRAIN_SOURCE_DIR;
}

}  // namespace

std::string default_gpt2_vocab_path() { return (source_root() / "data" / "gpt2" / "vocab.json").string(); }
std::string default_gpt2_merges_path() { return (source_root() / "data" / "gpt2" / "merges.txt").string(); }

GPT2Tokenizer::GPT2Tokenizer(const std::string& vocab_json_path, const std::string& merges_txt_path,
                             GPT2TokenizerOptions options)
    : model_(std::make_shared<const BpeModel>(vocab_json_path, merges_txt_path)),
      cache_(std::make_unique<BpeCache>(options.cache_capacity)),
      options_(options) {}

GPT2Tokenizer GPT2Tokenizer::load_default(GPT2TokenizerOptions options) {
  return GPT2Tokenizer(default_gpt2_vocab_path(), default_gpt2_merges_path(), options);
}

GPT2Tokenizer::GPT2Tokenizer(const GPT2Tokenizer& other)
    : model_(other.model_),
      cache_(std::make_unique<BpeCache>(other.options_.cache_capacity)),
      options_(other.options_) {}

GPT2Tokenizer& GPT2Tokenizer::operator=(const GPT2Tokenizer& other) {
  if (this != &other) {
    model_ = other.model_;
    options_ = other.options_;
    cache_ = std::make_unique<BpeCache>(options_.cache_capacity);
  }
  return *this;
}

GPT2Tokenizer::GPT2Tokenizer(GPT2Tokenizer&&) noexcept = default;
GPT2Tokenizer& GPT2Tokenizer::operator=(GPT2Tokenizer&&) noexcept = default;
GPT2Tokenizer::~GPT2Tokenizer() = default;

int32_t GPT2Tokenizer::vocab_size() const { return model_->vocab_size(); }
int32_t GPT2Tokenizer::eod_id() const { return model_->eod_id(); }
std::string_view GPT2Tokenizer::token_bytes(int32_t id) const {
  check(id >= 0 && id < vocab_size(), "token id {} out of range [0, {})", id, vocab_size());
  return model_->token_bytes(id);
}

void GPT2Tokenizer::encode(std::string_view text, std::vector<int32_t>& out) {
  std::vector<TextPiece> pieces;
  auto encode_plain = [&](std::string_view part) {
    gpt2_pretokenize(part, pieces);
    for (const TextPiece& p : pieces) {
      const std::string_view piece = part.substr(p.begin, p.end - p.begin);
      if (piece.size() > kMaxCachedPiece) {
        model_->encode_piece(piece, out);
        continue;
      }
      const uint64_t h = BpeCache::hash(piece);
      if (cache_->lookup(piece, h, out)) continue;
      const size_t before = out.size();
      model_->encode_piece(piece, out);
      cache_->insert(piece, h, out.data() + before, out.size() - before);
    }
  };
  if (options_.special_tokens_as_text) {
    encode_plain(text);
    return;
  }
  // Split on <|endoftext|> (Hugging Face matches added special tokens anywhere in the text).
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(kEndOfText, pos);
    if (hit == std::string_view::npos) break;
    if (hit > pos) encode_plain(text.substr(pos, hit - pos));
    out.push_back(model_->eod_id());
    pos = hit + kEndOfText.size();
  }
  if (pos < text.size()) encode_plain(text.substr(pos));
}

std::string GPT2Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) out += token_bytes(id);
  return out;
}

}  // namespace gptrain
