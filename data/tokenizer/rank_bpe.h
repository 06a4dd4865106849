// tiktoken's byte-pair encoding: the vocabulary is a list of byte strings whose rank is their id, and
// a piece is encoded by merging, again and again, the adjacent pair whose concatenation has the lowest
// rank (leftmost on ties) among the pairs whose concatenation is a token. A piece that is itself a
// token is that token. Unlike merges.txt BPE, any two adjacent parts whose bytes form a token merge,
// whichever merge produced that token in training; this is why it has its own model. Immutable and
// shared by every tokenizer copy.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gptrain {

class RankBpe {
 public:
  // tokens[r]: the bytes of rank r (distinct, every single byte among them); id = r + id_offset.
  RankBpe(std::vector<std::string> tokens, int32_t id_offset);

  // The id of exactly these bytes, or -1.
  int32_t find(std::string_view bytes) const {
    const uint64_t h = hash(bytes);
    for (size_t slot = h & mask_;; slot = (slot + 1) & mask_) {
      const Slot& s = slots_[slot];
      if (s.rank < 0) return -1;
      if (s.hash == h && rank_bytes(s.rank) == bytes) return s.rank + id_offset_;
    }
  }
  // Appends the ids of one pre-tokenized piece.
  void encode_piece(std::string_view bytes, std::vector<int32_t>& out) const;
  // The parts the rank merge reaches on rank's own bytes using only lower ranks: two parts are the
  // merge that builds this token (what a merges list needs); more mean no merge of two lower ranks
  // makes it, so only a whole-piece lookup gives it.
  std::vector<std::string_view> parts_below(int32_t rank) const;

  int32_t size() const { return static_cast<int32_t>(offsets_.size()) - 1; }
  std::string_view rank_bytes(int32_t rank) const {
    return {bytes_.data() + offsets_[rank], offsets_[rank + 1] - offsets_[rank]};
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    int32_t rank = -1;
  };
  static uint64_t hash(std::string_view s);
  // Rank of bytes, or INT32_MAX when they are not a token.
  int32_t rank_of(std::string_view bytes) const {
    const int32_t id = find(bytes);
    return id < 0 ? INT32_MAX : id - id_offset_;
  }
  void encode_long_piece(std::string_view bytes, std::vector<int32_t>& out) const;

  std::string bytes_;            // every rank's bytes, concatenated
  std::vector<size_t> offsets_;  // (R+1,)
  std::vector<Slot> slots_;      // open addressing on the bytes
  size_t mask_ = 0;
  int32_t id_offset_;
};

}  // namespace gptrain
