// The immutable half of GPT-2 byte-level BPE: the vocabulary (id <-> bytes), the 256 single-byte
// tokens, and the merge table (pair of ids -> merge rank and merged id). Shared by every tokenizer copy.
//
// Byte-level: vocab.json spells each token with GPT-2's bytes_to_unicode alphabet (byte b is shown as
// a printable character, e.g. a space as U+0120 'Ġ'); the model converts every token back to its raw
// bytes at load time, so BPE runs directly on the UTF-8 bytes of the text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gptrain {

class BpeModel {
 public:
  BpeModel(const std::string& vocab_json_path, const std::string& merges_txt_path);
  // From tables read elsewhere (a tokenizer.json): the raw bytes of every id, the single-byte tokens,
  // and the merges in rank order as (left id, right id, merged id). eod_id may be -1.
  struct MergeIds {
    int32_t left, right, merged;
  };
  BpeModel(const std::vector<std::string>& tokens, const int32_t (&byte_tokens)[256],
           const std::vector<MergeIds>& merges, int32_t eod_id);

  int32_t vocab_size() const { return static_cast<int32_t>(token_offsets_.size()) - 1; }
  int32_t eod_id() const { return eod_id_; }
  // Raw bytes of token id (0 <= id < vocab_size()).
  std::string_view token_bytes(int32_t id) const {
    return {token_bytes_.data() + token_offsets_[id], token_offsets_[id + 1] - token_offsets_[id]};
  }
  // Token of the single byte b.
  int32_t byte_token(unsigned char b) const { return byte_token_[b]; }

  // Merge of the adjacent pair (left, right): its rank (lower merges first) and the merged id, or
  // rank -1 when the pair is not a merge.
  struct Merge {
    int32_t rank;
    int32_t id;
  };
  Merge merge(int32_t left, int32_t right) const {
    const uint64_t key = pair_key(left, right);
    for (size_t slot = hash(key) & mask_;; slot = (slot + 1) & mask_) {
      const Slot& s = slots_[slot];
      if (s.key == key) return {s.rank, s.id};
      if (s.key == kEmpty) return {-1, -1};
    }
  }

  // BPE-encodes one pre-tokenized piece (its raw bytes), appending ids to out.
  void encode_piece(std::string_view bytes, std::vector<int32_t>& out) const;
  // Merges initial symbols given as ids (a character-level model's characters and byte-fallback
  // tokens), appending the result to out; sym is scratch.
  void encode_symbols(std::vector<int32_t>& sym, std::vector<int32_t>& out) const;

 private:
  struct Slot {
    uint64_t key;
    int32_t rank;
    int32_t id;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static size_t hash(uint64_t k) { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> 17); }
  void set_tokens(const std::vector<std::string>& tokens);
  void reserve_merges(size_t vocab_size);
  void insert_merge(int32_t left, int32_t right, int32_t rank, int32_t id);
  static constexpr size_t kShortPiece = 48;  // longer: a heap instead of the O(n^2) scan
  void merge_short(int32_t* sym, size_t n, std::vector<int32_t>& out) const;
  void merge_long(std::vector<int32_t>& sym, std::vector<int32_t>& out) const;

  std::string token_bytes_;            // all tokens' bytes, concatenated by id
  std::vector<size_t> token_offsets_;  // (V+1,) token id's bytes are [offsets[id], offsets[id+1])
  int32_t byte_token_[256] = {};
  int32_t eod_id_ = -1;
  std::vector<Slot> slots_;  // open-addressing merge table
  size_t mask_ = 0;
};

// GPT-2's bytes_to_unicode: the printable code point that stands for byte b in vocab.json/merges.txt.
uint32_t byte_to_unicode(unsigned char b);
// The raw bytes of a token spelled in that alphabet; false (out unspecified) when spelled holds a
// character outside it.
bool byte_level_to_bytes(std::string_view spelled, std::string& out);

}  // namespace gptrain
