// The SentencePiece-converted family of tokenizer.json (Llama-2, Mistral, Mixtral), the steps that the
// byte-level family does not have: normalizers (Prepend, Replace), the Metaspace pre-tokenizer, the
// character-level BPE symbols with byte fallback and the unknown token, and the decoder chain. As
// Hugging Face `tokenizers` 0.20 runs them; which fields are read: hf_tokenizer_json.h.
#pragma once

#include "data/tokenizer/gpt2_pretokenizer.h"
#include "data/tokenizer/hf_tokenizer_json.h"

#include <string>
#include <string_view>
#include <vector>

namespace gptrain {

// The normalizers in order; out receives the normalized text (in may not alias out).
void hf_normalize(const std::vector<HfNormalizerStep>& steps, std::string_view in, std::string& out);

// Metaspace: out receives the text with every ' ' replaced and the replacement put in front when the
// scheme asks (at_start: the text begins the input, for prepend_scheme first); pieces cut out before
// every replacement when m.split, else one piece.
void metaspace_pretokenize(const HfMetaspace& m, std::string_view text, bool at_start, std::string& out,
                           std::vector<TextPiece>& pieces);

// The initial BPE symbols of one word: each character's id, or its bytes' <0xNN> ids (byte fallback),
// or the unknown token (consecutive ones fused with fuse_unk). Bytes that are not valid UTF-8 are
// characters of their own (not in the vocabulary). Throws when a character has none of these.
void hf_char_symbols(const HfTokenizerTables& t, std::string_view word, std::vector<int32_t>& sym);

// The decoder chain over the tokens' text; <0xNN> bytes stay raw (no U+FFFD for invalid UTF-8).
std::string hf_decode_chain(const std::vector<HfDecoderStep>& steps, std::vector<std::string> tokens);

}  // namespace gptrain
