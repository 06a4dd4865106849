// The vocabulary file of Megatron's TikTokenizer (--tokenizer-model), in either of two formats:
//   *.json   Megatron's: a list of {"rank": i, "token_bytes": BASE64, "token_str": ...}, rank equal to
//            the position, the first 256 entries the single bytes 0..255 in order;
//   other    tiktoken's BPE file (e.g. cl100k_base.tiktoken, Llama-3's tokenizer.model): one
//            "BASE64 RANK" per line, ranks 0..N-1 each once, every single byte among the tokens.
// Megatron keeps the first max_ranks entries (its vocabulary size minus the special tokens); a file
// with fewer is refused, as Megatron's check of the id range refuses it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gptrain {

// The bytes of ranks 0..max_ranks-1. Throws gptrain::Error naming the file (and line or entry).
std::vector<std::string> read_tiktoken_vocab(const std::string& path, int64_t max_ranks);

// Standard base64 (RFC 4648, '=' padding) -> bytes; false when s is not valid base64.
bool decode_base64(std::string_view s, std::string& out);

}  // namespace gptrain
