// The tokenizer files a Hugging Face model directory needs for AutoTokenizer.from_pretrained(dir)
// to work offline.
#pragma once

#include <string>

namespace gptrain {
class SentencePieceTokenizer;
class TikTokenizer;
}  // namespace gptrain

namespace gptrain::hf {

// GPT-2 byte-level BPE: copies vocab.json and merges.txt and writes tokenizer_config.json
// (GPT2Tokenizer, <|endoftext|> as bos/eos/unk) and special_tokens_map.json.
void write_gpt2_tokenizer(const std::string& out_dir, const std::string& vocab_file, const std::string& merge_file,
                          int model_max_length);
// Copies the tokenizer files found in a Hugging Face directory (tokenizer.json, tokenizer.model,
// tokenizer_config.json, special_tokens_map.json, vocab.json, merges.txt, added_tokens.json).
// Returns the number copied; throws if the directory holds none.
int copy_hf_tokenizer(const std::string& from_dir, const std::string& out_dir);
// HuggingFaceTokenizer's --tokenizer-model (a directory, or a tokenizer.json with its directory's
// tokenizer_config.json / special_tokens_map.json beside it): copies those files; where no
// tokenizer_config.json comes with them, writes one (PreTrainedTokenizerFast, bos/eos from the
// tokenizer) so that AutoTokenizer keeps tokenizer.json exactly as it is.
void write_hf_tokenizer(const std::string& tokenizer_model, const std::string& out_dir, int model_max_length);
// The three SentencePiece types: copies the .model as tokenizer.model and writes tokenizer_config.json
// (LlamaTokenizer, legacy; add_bos_token as the type adds BOS; the type's special tokens, e.g.
// SentencePieceTokenizer's <EOD>, as added special tokens) and special_tokens_map.json, so that
// LlamaTokenizer gives the same ids. No tokenizer.json: AutoTokenizer builds LlamaTokenizerFast from
// tokenizer.model, which equals SentencePiece only for Llama-style models; a warning names what differs.
void write_sentencepiece_tokenizer(const SentencePieceTokenizer& tok, const std::string& out_dir, int model_max_length);
// Megatron's TikTokenizer as a byte-level BPE tokenizer.json (PreTrainedTokenizerFast gives the same ids):
// the ranks shifted by S as the vocabulary, the S special tokens as added special tokens, merges from
// the ranks (each token's split into two lower ranks the rank merge reaches, ordered by rank),
// ignore_merges for tiktoken's whole-piece lookup, a Split with the v1/v2 pattern before ByteLevel.
// Tokens no merge of two lower ranks builds stay in the vocabulary (the whole-piece lookup finds them);
// a warning counts them, since inside a longer piece they cannot form as tiktoken would form them.
void write_tiktoken_tokenizer(const TikTokenizer& tok, const std::string& out_dir, int model_max_length);

}  // namespace gptrain::hf
