// The split patterns of Megatron's TikTokenizer (--tiktoken-pattern), as tiktoken runs them:
//   v1  [^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+
//       = Llama-3's scanner without contractions and with single digits (llama3_pretokenizer.h).
//   v2  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
//      |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*
//      |\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
// v2 written out as a scanner with the regex's leftmost-alternative, greedy-with-backtracking meaning.
// Call "upper" the class [Lu Lt Lm Lo M] and "lower" [Ll Lm Lo M] (Lm, Lo and marks are both), and
// "prefix" a character that is neither \r, \n, a letter nor a number (marks included). At each
// position the first rule that matches gives the piece:
//   1. an optional prefix, then upper characters and at least one lower one: the upper run as far
//      as it goes, then the lower run after it; when no lower character follows the upper run, the
//      piece ends after the last character of the run that is also lower (the regex gives the rest
//      back); without such a character the prefix is dropped and the rule tried again at the same
//      position (a mark can be the prefix and the start);
//   2. an optional prefix, an upper run and the lower run after it;
//   3. one number;
//   4. a run of "other" characters (neither \s, \p{L} nor \p{N}) with one optional U+0020 in front,
//      then the \r, \n and '/' characters right after it;
//   5.-7. white space as Llama-3's rules 5 to 7.
// Bytes that are not valid UTF-8 count as "other" characters without case.
#pragma once

#include "data/tokenizer/gpt2_pretokenizer.h"

namespace gptrain {

enum class TiktokenPattern { kV1, kV2 };

// The two patterns as regex text, exactly as Megatron writes them (a tokenizer.json Split carries them).
inline constexpr std::string_view kTiktokenV1Regex =
    R"re([^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+)re";
inline constexpr std::string_view kTiktokenV2Regex =
    R"re([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+|[^\r\n\p{L}\p{N}]?)re"
    R"re([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|)re"
    R"re(\s*[\r\n]+|\s+(?!\S)|\s+)re";

// Replaces out with the pieces of text, in order; they cover text exactly. Texts must be < 4 GiB.
void tiktoken_pretokenize(std::string_view text, TiktokenPattern pattern, std::vector<TextPiece>& out);

}  // namespace gptrain
