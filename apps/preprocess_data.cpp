// preprocess_data: Megatron's tools/preprocess_data.py, in C++. JSON lines (.jsonl/.json, .gz, .zst;
// files or globs) -> {output_prefix}_{key}_document.bin/.idx with GPT-2 BPE, byte-identical to what
// Megatron writes, for any --workers. Megatron's flags are accepted: the ones that matter for
// GPT2BPETokenizer are honoured, --split-sentences / --find-optimal-num-workers / other tokenizer types
// are refused with a message, and tokenizer flags that GPT2BPETokenizer ignores are accepted with a
// warning. The pipeline itself: data/jsonl/preprocess_pipeline.h.
//
//   preprocess_data --input data.jsonl --output-prefix my-gpt2 --tokenizer-type GPT2BPETokenizer
//       --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt --append-eod --workers 8
#include "core/common/error.h"
#include "core/common/log.h"
#include "data/jsonl/input_files.h"
#include "data/jsonl/preprocess_pipeline.h"
#include "data/tokenizer/gpt2_tokenizer.h"

#include <CLI/CLI.hpp>

namespace {

int body(int argc, char** argv) {
  using namespace gptrain;
  CLI::App app{"preprocess_data: JSON lines -> Megatron indexed dataset (.bin/.idx) with GPT-2 BPE"};
  PreprocessOptions o;
  std::vector<std::string> inputs;
  std::string tokenizer_type, lang = "english";
  bool split_sentences = false, keep_newlines = false, find_optimal = false;
  app.add_option("--input", inputs, "Input JSON-lines files or globs (.jsonl .json .jsonl.gz .jsonl.zst)")->required();
  app.add_option("--json-keys", o.json_keys, "Keys to extract from each JSON object (one dataset per key)");
  app.add_option("--output-prefix", o.output_prefix, "Output path prefix: {prefix}_{key}_document.bin/.idx")->required();
  app.add_option("--tokenizer-type", tokenizer_type, "Only GPT2BPETokenizer is supported")->required();
  app.add_option("--vocab-file", o.vocab_file, "GPT-2 vocab.json (default: data/gpt2/vocab.json of the source tree)");
  app.add_option("--merge-file", o.merge_file, "GPT-2 merges.txt (default: data/gpt2/merges.txt of the source tree)");
  app.add_flag("--append-eod", o.append_eod, "Append <|endoftext|> (50256) to every non-empty document");
  app.add_option("--workers", o.workers, "Tokenizing threads (output is identical for any value)");
  app.add_option("--log-interval", o.log_interval, "Progress line on stderr every N documents (0: none)");
  app.add_option("--partitions", o.partitions,
                 "Megatron's partitions: N > 1 reorders documents round-robin as Megatron does, unless "
                 "--keep-sequential-samples");
  app.add_flag("--keep-sequential-samples", o.keep_sequential_samples, "With --partitions: keep input order");
  app.add_flag("--skip-bad-lines", o.skip_bad_lines, "Skip (and count) malformed lines instead of stopping");
  app.add_flag("--endoftext-as-text", o.endoftext_as_text,
               "Tokenize a literal <|endoftext|> in text as text (default: it becomes id 50256, as in Megatron)");
  app.add_flag("--split-sentences", split_sentences, "Not supported (needs NLTK punkt)");
  app.add_flag("--keep-newlines", keep_newlines, "Only used with --split-sentences (no effect otherwise)");
  app.add_option("--lang", lang, "Only used with --split-sentences (no effect otherwise)");
  app.add_flag("--find-optimal-num-workers", find_optimal, "Not supported");
  // Accepted because Megatron accepts them; without --find-optimal-num-workers they do nothing there
  // either.
  std::vector<std::string> workers_to_check;
  int64_t max_documents = 0;
  std::string performance_dir;
  app.add_option("--workers-to-check", workers_to_check, "Only with --find-optimal-num-workers (no effect)");
  app.add_option("--max-documents", max_documents, "Only with --find-optimal-num-workers (no effect)");
  app.add_option("--performance-dir", performance_dir, "Only with --find-optimal-num-workers (no effect)");
  // Megatron tokenizer flags that GPT2BPETokenizer does not use.
  std::vector<std::string> ignored_values;
  const std::vector<std::string> ignored_options = {
      "--tokenizer-model", "--vocab-size", "--vocab-extra-ids", "--tokenizer-metadata",
      "--tiktoken-pattern", "--tiktoken-num-special-tokens", "--null-tokenizer-eod-id", "--null-tokenizer-pad-id",
      "--tokenizer-prompt-format"};
  const std::vector<std::string> ignored_lists = {"--tokenizer-special-tokens", "--tiktoken-special-tokens"};
  const std::vector<std::string> ignored_flags = {"--tokenizer-hf-no-use-fast", "--tokenizer-hf-use-fast",
                                                  "--tokenizer-hf-no-include-special-tokens", "--trust-remote-code"};
  std::vector<CLI::Option*> ignored;
  for (const auto& name : ignored_options)
    ignored.push_back(app.add_option(name, ignored_values, "Ignored for GPT2BPETokenizer")->multi_option_policy(CLI::MultiOptionPolicy::TakeAll));
  for (const auto& name : ignored_lists) ignored.push_back(app.add_option(name, ignored_values, "Ignored for GPT2BPETokenizer"));
  for (const auto& name : ignored_flags) {
    const std::string help = "Ignored for GPT2BPETokenizer";
    ignored.push_back(app.add_flag(name, help));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }

  if (tokenizer_type != "GPT2BPETokenizer")
    fail("--tokenizer-type {}: not supported; this preprocess_data implements GPT2BPETokenizer (GPT-2 byte-level "
         "BPE) only",
         tokenizer_type);
  if (split_sentences)
    fail("--split-sentences: not supported (Megatron splits with NLTK punkt, which has no C++ equivalent here); "
         "pre-split text can be given as a JSON array of strings, each becoming one sequence");
  if (find_optimal) fail("--find-optimal-num-workers: not supported; run with a few --workers values and compare the MB/s lines");
  check(o.workers >= 1, "--workers {}: expected at least 1", o.workers);
  check(o.partitions >= 1, "--partitions {}: expected at least 1", o.partitions);
  check(o.log_interval >= 0, "--log-interval {}: expected 0 or more", o.log_interval);
  for (const std::string& k : o.json_keys) check(!k.empty(), "--json-keys: empty key");
  for (CLI::Option* opt : ignored)
    if (opt->count() > 0)
      log::warn("preprocess_data: {} has no effect with GPT2BPETokenizer (Megatron ignores it too)", opt->get_name());
  if (keep_newlines) log::warn("preprocess_data: --keep-newlines has no effect without --split-sentences (as in Megatron)");
  if (o.vocab_file.empty()) o.vocab_file = default_gpt2_vocab_path();
  if (o.merge_file.empty()) o.merge_file = default_gpt2_merges_path();
  o.inputs = expand_input_files(inputs);

  const PreprocessSummary s = preprocess_jsonl(o);
  log::info("preprocess_data: {} documents from {} file(s), {:.2f} MB in {:.2f} s ({:.2f} MB/s); {} blank lines, {} bad lines skipped",
            s.documents, o.inputs.size(), s.input_bytes / 1e6, s.seconds, s.input_bytes / 1e6 / std::max(s.seconds, 1e-9),
            s.blank_lines, s.bad_lines);
  int64_t tokens = 0;
  for (int64_t t : s.tokens) tokens += t;
  const double cpu = std::max(s.worker_cpu_seconds, 1e-9);
  log::info("preprocess_data: workers: {:.2f} CPU-s parsing + tokenizing = {:.2f} MB/s and {:.0f} tokens/s per worker CPU-second",
            s.worker_cpu_seconds, s.input_bytes / 1e6 / cpu, tokens / cpu);
  for (size_t k = 0; k < s.output_prefixes.size(); ++k)
    log::info("preprocess_data: key \"{}\": {} tokens -> {}.bin / .idx", o.json_keys[k], s.tokens[k], s.output_prefixes[k]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("preprocess_data", body, argc, argv); }
