// The immutable half of the native SentencePiece BPE encoder: the pieces in a flat hash (bytes -> id),
// their scores, the 256 byte-fallback pieces, and the normalizer options. Built only for the models whose
// encoding it reproduces exactly (the Llama-2 / Mistral kind); anything else stays with the library.
//
// SentencePiece BPE, as the library does it:
//  - normalize: with no normalization rules (identity), text is copied character by character, a byte
//    that does not start valid UTF-8 becoming U+FFFD; add_dummy_prefix puts one space in front of
//    non-empty text; remove_extra_whitespaces drops leading/trailing spaces and collapses runs (only
//    U+0020 counts); escape_whitespaces writes each space as U+2581 "▁".
//  - split the normalized text into characters, except that a user-defined piece (the longest starting
//    at a point) is one symbol that never merges; repeatedly merge the adjacent pair whose concatenation
//    is a NORMAL piece with the highest score, the leftmost at a tie, until no pair is a piece.
//  - each final symbol is its piece id; a symbol that is no piece (or the unknown piece) becomes its
//    bytes' <0xNN> pieces (byte fallback).
// Every symbol of more than one character is a NORMAL or user-defined piece, so no symbol joins two
// characters that no such piece holds side by side: the text cut between such characters gives chunks
// that encode independently, which makes a per-chunk cache exact. The test is on bytes (the last byte of
// one character, the first of the next), a superset of the character pairs, so every cut it allows is safe.
#pragma once

#include "data/tokenizer/sentencepiece_model_proto.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace gptrain {

class SpmBpeModel {
 public:
  // The model, or nullptr with why set to the first reason the native encoder cannot reproduce it.
  static std::shared_ptr<const SpmBpeModel> build(const SentencePieceModelSpec& spec, std::string& why);

  // SentencePiece's normalized form of text (see above), replacing out.
  void normalize(std::string_view text, std::string& out) const;

  // Whether normalized text may be cut between the character ending in byte a and the one starting with b.
  bool can_cut(unsigned char a, unsigned char b) const { return !(joined_[a][b >> 6] >> (b & 63) & 1); }

  // Scratch the BPE loop reuses between calls (one per encoder).
  struct Scratch {
    struct Symbol {
      uint32_t start, len;
      int32_t prev, next;
      bool frozen;  // a user-defined piece
    };
    struct Pair {
      float score;
      int32_t left, right;
      uint32_t len;
    };
    std::vector<Symbol> symbols;
    std::vector<Pair> heap;
  };
  // BPE-encodes a piece of normalized text (a whole text or a chunk of it), appending ids to out.
  void encode_normalized(std::string_view text, Scratch& scratch, std::vector<int32_t>& out) const;

  // The id of a piece spelled bytes, or -1.
  int32_t find(std::string_view bytes) const;

 private:
  struct Slot {
    uint64_t hash;
    uint32_t offset, len;  // bytes in text_
    int32_t id;            // -1: empty
  };
  void mark_joined(std::string_view piece);
  uint32_t user_defined_at(std::string_view text) const;  // length of the longest at the front, or 0
  void add_symbol_ids(std::string_view piece, std::vector<int32_t>& out) const;
  void maybe_push_pair(std::string_view text, Scratch& s, int32_t left, int32_t right) const;

  std::string text_;         // every piece's bytes, concatenated
  std::vector<Slot> slots_;  // open addressing over all pieces
  size_t mask_ = 0;
  std::vector<float> score_;   // (V,)
  std::vector<uint8_t> type_;  // (V,) SentencePieceModelSpec::PieceType
  int32_t byte_id_[256] = {};
  bool add_dummy_prefix_ = true, remove_extra_whitespaces_ = true, escape_whitespaces_ = true;
  // Bit (a, b): some NORMAL or user-defined piece holds a character ending in byte a right before one starting with b.
  uint64_t joined_[256][4] = {};
  std::vector<std::string> user_defined_[256];  // user-defined pieces by first byte
};

}  // namespace gptrain
