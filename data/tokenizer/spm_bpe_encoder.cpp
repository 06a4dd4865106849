// See spm_bpe_encoder.h.
#include "data/tokenizer/spm_bpe_encoder.h"

namespace gptrain {

namespace {
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
  // Chunks end between two characters no piece holds side by side: "▁hello▁world" -> "▁hello", "▁world".
  size_t start = 0;
  for (size_t i = 1; i < s.size(); ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    if ((b & 0xc0) != 0x80 && model_->can_cut(static_cast<unsigned char>(s[i - 1]), b)) {
      encode_chunk(s.substr(start, i - start), out);
      start = i;
    }
  }
  encode_chunk(s.substr(start), out);
}

}  // namespace gptrain
