// GPT-2's pre-tokenizer: cuts text into the pieces that BPE then encodes one by one. It is the regex
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (OpenAI's encoder.py; Hugging Face's ByteLevel pre-tokenizer), written out as a scanner with the
// regex's leftmost-alternative, greedy-with-backtracking meaning:
//   - an apostrophe followed by s t m d re ve ll (lower case only) is a piece;
//   - a run of letters, or of numbers, or of "other" characters (neither \s, \p{L} nor \p{N}), with
//     one optional ASCII space (U+0020, not any white space) in front;
//   - a run of white space that reaches the end of the text is one piece; a run followed by a
//     non-space character leaves its last character out (it becomes the optional space of the next
//     piece when it is U+0020, or a one-character piece otherwise).
// Character classes: unicode_tables.h. Bytes that are not valid UTF-8 count as "other" characters.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace gptrain {

struct TextPiece {
  uint32_t begin;  // byte offset in the text
  uint32_t end;    // one past the last byte
};

// Replaces out with the pieces of text, in order; they cover text exactly. Texts must be < 4 GiB.
void gpt2_pretokenize(std::string_view text, std::vector<TextPiece>& out);

}  // namespace gptrain
