// The split regex of Llama-3 (and, with single digits, Qwen2), as Hugging Face's Split pre-tokenizer
// runs it (behavior Isolated):
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// written out as a scanner with the regex's leftmost-alternative, greedy-with-backtracking meaning.
// At each position the first alternative that matches gives the piece:
//   1. an apostrophe and s t m d re ve ll in any case (U+017F counts as s);
//   2. a run of letters, with one character in front that is neither \r, \n, a letter nor a number
//      (a space, a tab, punctuation...), when a letter follows it;
//   3. 1 to max_digits numbers (\p{N});
//   4. a run of "other" characters (neither \s, \p{L} nor \p{N}) with one optional U+0020 in front and
//      the \r/\n characters right after it;
//   5. a white-space run up to and including its last \r or \n;
//   6. a white-space run that reaches the end of the text; one followed by a non-space character loses
//      its last character (the next piece may take it, by rule 2 or 4);
//   7. a single white-space character (the run of rule 6 when it is one character long).
// Classes as in gpt2_pretokenizer.h (unicode_tables.h); bytes that are not valid UTF-8 count as "other".
#pragma once

#include "data/tokenizer/gpt2_pretokenizer.h"

namespace gptrain {

// Replaces out with the pieces of text, in order; they cover text exactly. max_digits: 3 (Llama-3) or 1.
// contractions false drops rule 1: tiktoken's v1 pattern (Megatron's TikTokenizer) is exactly this
// regex without the contractions and with single digits (its possessive ?+ and ++ change nothing
// here, and its \s*[\r\n] ends at the same last newline as \s*[\r\n]+).
void llama3_pretokenize(std::string_view text, int max_digits, std::vector<TextPiece>& out, bool contractions = true);

}  // namespace gptrain
