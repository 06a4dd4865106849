// Native SentencePiece BPE encoding for one tokenizer copy: normalizes the text, cuts it where no piece
// can span (SpmBpeModel::can_cut), and looks each chunk up in a per-copy cache before running BPE
// on it. Not thread-safe: each copy of the tokenizer owns one.
#pragma once

#include "data/tokenizer/bpe_cache.h"
#include "data/tokenizer/spm_bpe_model.h"

#include <memory>

namespace gptrain {

class SpmBpeEncoder {
 public:
  explicit SpmBpeEncoder(std::shared_ptr<const SpmBpeModel> model);
  // The ids SentencePiece's Encode gives for text, appended to out.
  void encode(std::string_view text, std::vector<int32_t>& out);
  const std::shared_ptr<const SpmBpeModel>& model() const { return model_; }

 private:
  void encode_chunk(std::string_view chunk, std::vector<int32_t>& out);
  std::shared_ptr<const SpmBpeModel> model_;
  BpeCache cache_;
  SpmBpeModel::Scratch scratch_;
  std::string normalized_;
  std::vector<int32_t> ids_;
};

}  // namespace gptrain
