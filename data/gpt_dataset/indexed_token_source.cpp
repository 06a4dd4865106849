#include "data/gpt_dataset/indexed_token_source.h"

#include "data/indexed/indexed_dataset.h"

namespace gptrain {

namespace {

class IndexedTokenSource : public TokenSource {
 public:
  explicit IndexedTokenSource(const std::string& prefix) : ds_(IndexedDataset::open(prefix)) {}
  std::string path() const override { return ds_.prefix(); }
  int64_t num_sequences() const override { return ds_.num_sequences(); }
  std::span<const int32_t> sequence_lengths() const override { return ds_.sequence_lengths(); }
  void read(int64_t seq, int64_t offset, int64_t count, int32_t* out) const override {
    ds_.read_tokens(seq, offset, count, out);
  }

 private:
  IndexedDataset ds_;
};

}  // namespace

std::shared_ptr<const TokenSource> open_token_source(const std::string& prefix) {
  return std::make_shared<IndexedTokenSource>(prefix);
}

}  // namespace gptrain
