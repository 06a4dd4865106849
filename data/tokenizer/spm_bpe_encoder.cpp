// See spm_bpe_encoder.h.
#include "data/tokenizer/spm_bpe_encoder.h"

namespace gptrain {

namespace {
constexpr std::string_view kSpaceSymbol = "\xe2\x96\x81";  // U+2581
constexpr size_t kCacheEntries = size_t{1} << 16;
constexpr size_t kLongestCachedChunk = 64;  // bytes; longer chunks (rare words, long runs) are encoded directly
}  // namespace

SpmBpeEncoder::SpmBpeEncoder(std::shared_ptr<const SpmBpeModel> model)
    : model_(std::move(model)), cache_(kCacheEntries) {}

void SpmBpeEncoder::encode_chunk(std::string_view chunk, std::vector<int32_t>& out) {
  if (chunk.size() > kLongestCachedChunk) return model_->encode_normalized(chunk, scratch_, out);
  const uint64_t h = BpeCache::hash(chunk);
  if (cache_.lookup(chunk, h, out)) return;
  const size_t at = out.size();
  model_->encode_normalized(chunk, scratch_, out);
  cache_.insert(chunk, h, out.data() + at, out.size() - at);
}

void SpmBpeEncoder::encode(std::string_view text, std::vector<int32_t>& out) {
  model_->normalize(text, normalized_);
  const std::string_view s = normalized_;
  if (s.empty()) return;
  if (!model_->splits_at_space()) return model_->encode_normalized(s, scratch_, out);
  // Chunks end before each "▁" that follows another character: "▁▁hello▁world" -> "▁▁hello", "▁world".
  size_t start = 0;
  for (size_t k = s.find(kSpaceSymbol, 1); k != std::string_view::npos; k = s.find(kSpaceSymbol, k + 1)) {
    if (k - start >= kSpaceSymbol.size() && s.compare(k - kSpaceSymbol.size(), kSpaceSymbol.size(), kSpaceSymbol) == 0)
      continue;  // inside a run of spaces
    if (k > start) encode_chunk(s.substr(start, k - start), out);
    start = k;
  }
  encode_chunk(s.substr(start), out);
}

}  // namespace gptrain
