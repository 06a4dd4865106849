// The parts of a SentencePiece .model file (a serialized ModelProto) that decide how text is encoded:
// every piece with its score and type, the trainer's model type and byte fallback, and the normalizer's
// options. Read straight from the protobuf wire format (the Debian library ships no generated headers);
// fields not listed here are skipped. Defaults are the .proto's.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gptrain {

struct SentencePieceModelSpec {
  // ModelProto.SentencePiece.Type values.
  enum PieceType : int { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };
  enum ModelType : int { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };
  struct Piece {
    std::string text;
    float score = 0;
    int type = kNormal;
  };
  std::vector<Piece> pieces;  // by id
  // trainer_spec
  int model_type = kUnigram;
  bool byte_fallback = false;
  bool treat_whitespace_as_suffix = false;
  std::string pretokenization_delimiter;
  // normalizer_spec
  std::string normalizer_name;
  bool has_charsmap = false;  // a non-empty precompiled_charsmap (any rule-based normalization)
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Parses a serialized ModelProto; false when the bytes are not one.
bool parse_sentencepiece_model(std::string_view bytes, SentencePieceModelSpec& out);

}  // namespace gptrain
