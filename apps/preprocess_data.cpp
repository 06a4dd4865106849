// preprocess_data: Megatron's tools/preprocess_data.py, in C++. JSON lines (.jsonl/.json, .gz, .zst;
// files or globs) -> {output_prefix}_{key}_document.bin/.idx with GPT-2 BPE, a Hugging Face
// byte-level BPE tokenizer.json, a SentencePiece .model or a tiktoken vocabulary, byte-identical to what
// Megatron writes, for any --workers. Megatron's flags are accepted: the ones the implemented tokenizers
// use are honoured, --split-sentences / --find-optimal-num-workers / other tokenizer types are refused
// with a message, and tokenizer flags that the given type does not use are accepted with a warning.
// The pipeline itself:
// data/jsonl/preprocess_pipeline.h.
//
//   preprocess_data --input data.jsonl --output-prefix my-gpt2 --tokenizer-type GPT2BPETokenizer
//       --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt --append-eod --workers 8
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/config/flag_table.h"
#include "core/config/train_args.h"
#include "data/jsonl/input_files.h"
#include "data/jsonl/preprocess_pipeline.h"
#include "data/tokenizer/gpt2_tokenizer.h"
#include "core/config/tokenizer_spec.h"

#include <new>

namespace {

int body(int argc, char** argv) {
  using namespace gptrain;
  using K = FlagTable::Kind;
  PreprocessOptions o;
  std::vector<std::string> inputs;
  bool endoftext_as_text = false;
  TrainArgs a;  // the tokenizer flags, bound from pretrain_gpt's table
  FlagTable t = train_flag_table(a).only(with_tokenizer_flags({}));
  t.group("preprocess_data");
  t.list("input", &inputs, "Input JSON-lines files or globs (.jsonl .json .jsonl.gz .jsonl.zst)");
  t.list("json-keys", &o.json_keys, "Keys to extract from each JSON object (one dataset per key)");
  t.value("output-prefix", &o.output_prefix, "Output path prefix: {prefix}_{key}_document.bin/.idx");
  t.flag("append-eod", &o.append_eod,
         "Append the end-of-document id (GPT-2: <|endoftext|> 50256) to every non-empty document");
  t.value("workers", &o.workers, "Tokenizing threads (output is identical for any value)");
  t.value("log-interval", &o.log_interval, "Progress line on stderr every N documents (0: none)");
  t.value("partitions", &o.partitions,
          "Megatron's partitions: N > 1 reorders documents round-robin as Megatron does, unless "
          "--keep-sequential-samples");
  t.flag("keep-sequential-samples", &o.keep_sequential_samples, "With --partitions: keep input order");
  t.flag("skip-bad-lines", &o.skip_bad_lines, "Skip (and count) malformed lines instead of stopping");
  t.flag("endoftext-as-text", &endoftext_as_text,
         "Tokenize a literal <|endoftext|> in text as text (default: it becomes id 50256, as in Megatron)");
  t.unsupported("split-sentences",
                "Megatron splits with NLTK punkt, which has no C++ equivalent here; pre-split text can be given as a "
                "JSON array of strings, each becoming one sequence");
  t.unsupported("find-optimal-num-workers", "run with a few --workers values and compare the MB/s lines");
  // Megatron's preprocess_data of 2022-23 had only --vocab-file starting with "--vocab", so tutorials of that time
  // pass the prefix; the tokenizer flags added since make it ambiguous there, an alias keeps it working here.
  t.alias("vocab", "vocab-file");
  t.accept_values("dataset-impl", {"mmap"},
                  "the mmap .bin/.idx format is the one gptrain writes (and Megatron's only format since 2023)");
  t.noop("chunk-size", K::Value, "documents are handed to the workers in gptrain's own batches; output is the same");
  t.noop("keep-newlines", K::Switch, "only used with --split-sentences");
  t.noop("lang", K::Value, "only used with --split-sentences");
  // Accepted because Megatron accepts them; without --find-optimal-num-workers they do nothing there either.
  for (const char* n : {"workers-to-check", "max-documents", "performance-dir"})
    t.noop(n, K::List, "only used with --find-optimal-num-workers");
  // Megatron tokenizer flags that no implemented type uses (Megatron ignores them too).
  for (const char* n : {"vocab-extra-ids", "tokenizer-metadata", "null-tokenizer-eod-id", "null-tokenizer-pad-id",
                        "tokenizer-prompt-format"})
    t.noop(n, K::List, "ignored by GPT2BPETokenizer, HuggingFaceTokenizer and TikTokenizer");
  for (const char* n : {"tokenizer-hf-no-use-fast", "tokenizer-hf-use-fast", "tokenizer-hf-no-include-special-tokens",
                        "trust-remote-code"})
    t.noop(n, K::Switch, "ignored by GPT2BPETokenizer and HuggingFaceTokenizer");
  t.require("input");
  t.require("output-prefix");
  t.require("tokenizer-type");
  if (!t.parse("preprocess_data", argc, argv)) return 0;

  check(o.workers >= 1, "--workers {}: expected at least 1", o.workers);
  check(o.partitions >= 1, "--partitions {}: expected at least 1", o.partitions);
  check(o.log_interval >= 0, "--log-interval {}: expected 0 or more", o.log_interval);
  for (const std::string& k : o.json_keys) check(!k.empty(), "--json-keys: empty key");
  const TokenizerArgs& ta = a.tokenizer;
  if (ta.tokenizer_type != "TikTokenizer" &&
      (ta.tiktoken_pattern || ta.tiktoken_num_special_tokens != 1000 || !ta.tiktoken_special_tokens.empty()))
    log::warn("--tiktoken-*/--tokenizer-special-tokens: read by TikTokenizer only; --tokenizer-type {} ignores them",
              ta.tokenizer_type);
  if (ta.vocab_size && ta.tokenizer_type != "TikTokenizer" && ta.tokenizer_type != "NullTokenizer")
    log::warn("--vocab-size: ignored by --tokenizer-type {} (its vocabulary sets the size)", ta.tokenizer_type);
  o.tokenizer = tokenizer_spec(a.tokenizer, endoftext_as_text);
  if (o.tokenizer.type == "GPT2BPETokenizer" && (o.tokenizer.vocab_file || o.tokenizer.merge_file)) {
    // One GPT-2 file given: the other is the shipped one.
    o.tokenizer.vocab_file = o.tokenizer.vocab_file.value_or(default_gpt2_vocab_path());
    o.tokenizer.merge_file = o.tokenizer.merge_file.value_or(default_gpt2_merges_path());
  }
  o.inputs = expand_input_files(inputs);

  PreprocessSummary s;
  try {
    s = preprocess_jsonl(o);
  } catch (const std::bad_alloc&) {  // the outputs' temporaries are gone by now (their writers unwound)
    fail("out of host memory with --workers {}; use fewer --workers or give the process more memory", o.workers);
  }
  log::info(
      "preprocess_data: {} documents from {} file(s), {:.2f} MB in {:.2f} s ({:.2f} MB/s); {} blank lines, {} bad "
      "lines skipped",
      s.documents, o.inputs.size(), s.input_bytes / 1e6, s.seconds, s.input_bytes / 1e6 / std::max(s.seconds, 1e-9),
      s.blank_lines, s.bad_lines);
  int64_t tokens = 0;
  for (int64_t t : s.tokens) tokens += t;
  const double cpu = std::max(s.worker_cpu_seconds, 1e-9);
  log::info(
      "preprocess_data: workers: {:.2f} CPU-s parsing + tokenizing = {:.2f} MB/s and {:.0f} tokens/s per worker "
      "CPU-second",
      s.worker_cpu_seconds, s.input_bytes / 1e6 / cpu, tokens / cpu);
  for (size_t k = 0; k < s.output_prefixes.size(); ++k)
    log::info("preprocess_data: key \"{}\": {} tokens -> {}.bin / .idx", o.json_keys[k], s.tokens[k],
              s.output_prefixes[k]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("preprocess_data", body, argc, argv); }
