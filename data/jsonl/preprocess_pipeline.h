// The preprocess_data pipeline: JSON lines in, one Megatron indexed dataset per JSON key out
// ({prefix}_{key}_document.bin/.idx), the tokenizer (data/tokenizer/tokenizer.h) in between.
//
// Threads: one reader cuts the input into batches of whole lines (~1 MB), `workers` threads parse and
// tokenize batches, and the calling thread writes finished batches strictly in input order. The
// reader may run at most 2*workers+2 batches ahead of the writer, so memory stays bounded whatever
// the input size (a single huge line is the only thing held whole). The output depends only on the
// input, never on the number of workers or on timing.
//
// A document is one non-blank line: a JSON object whose every --json-keys key holds a string (or an
// array of strings, each a sentence/sequence, as Megatron's tool accepts). Blank lines are skipped and
// counted. A line that is not such an object stops the run with "file:line: what was wrong" (nothing
// is left under the final output names), or, with skip_bad_lines, is skipped and counted.
#pragma once

#include "data/tokenizer/tokenizer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gptrain {

struct PreprocessOptions {
  std::vector<std::string> inputs;  // files in processing order (globs already expanded)
  std::string output_prefix;
  std::vector<std::string> json_keys{"text"};
  TokenizerSpec tokenizer;  // --tokenizer-type and its files (special_tokens_as_text: --endoftext-as-text)
  bool append_eod = false;
  int workers = 1;
  int64_t log_interval = 1000;  // progress line every this many documents (0: none)
  bool skip_bad_lines = false;
  // Megatron's --partitions: with partitions > 1 and no keep_sequential_samples, document j goes to
  // partition j % partitions and the output is partition 0's documents, then 1's, ... (what Megatron's
  // round-robin partition files give). With keep_sequential_samples the order is the input order.
  int partitions = 1;
  bool keep_sequential_samples = false;
  size_t batch_bytes = 1 << 20;
};

struct PreprocessSummary {
  int64_t documents = 0;
  int64_t blank_lines = 0;
  int64_t bad_lines = 0;
  uint64_t input_bytes = 0;                  // bytes of the (decompressed) lines
  std::vector<int64_t> tokens;               // per key
  std::vector<std::string> output_prefixes;  // per key: {prefix}_{key}_document
  double seconds = 0;                        // wall clock
  double worker_cpu_seconds = 0;             // CPU time the workers spent parsing JSON and tokenizing, summed
};

PreprocessSummary preprocess_jsonl(const PreprocessOptions& options);

}  // namespace gptrain
