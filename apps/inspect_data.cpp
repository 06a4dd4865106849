// inspect_data: see what the model sees.
//   inspect_data summary --data-path P                      dtype, counts, sequence length histogram
//   inspect_data doc --data-path P --index I [--ids]        decode document I with the GPT-2 tokenizer
//   inspect_data samples --data-path ... --seq-length S [--split ...] [--seed N] [--train-samples N]
//       [--valid-samples N] [--test-samples N] [--fingerprint | --decode] [--limit N]
//     every sample of every split in Megatron's order; --fingerprint prints "split index hex" with the
//     FNV-1a-64 of the S+1 token window (tokens as 4-byte little-endian uint32), so runs and tools can
//     be compared sample by sample.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "core/common/error.h"
#include "core/common/log.h"
#include "data/gpt_dataset/split.h"
#include "data/indexed/indexed_dataset.h"
#include "data/loader/gpt_data.h"
#include "data/tokenizer/gpt2_tokenizer.h"

namespace {

using namespace gptrain;

uint64_t fnv1a64_tokens(const std::vector<int32_t>& w) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int32_t t : w) {
    const auto u = static_cast<uint32_t>(t);
    for (int b = 0; b < 4; ++b) h = (h ^ ((u >> (8 * b)) & 0xffu)) * 0x100000001b3ULL;
  }
  return h;
}

GPT2Tokenizer load_tokenizer(const std::string& vocab, const std::string& merges) {
  if (vocab.empty() != merges.empty()) fail("give both --vocab-file and --merge-file, or neither (GPT-2 default)");
  return vocab.empty() ? GPT2Tokenizer::load_default() : GPT2Tokenizer(vocab, merges);
}

int summary(const std::string& prefix) {
  const IndexedDataset ds = IndexedDataset::open(prefix);
  const auto lens = ds.sequence_lengths();
  fmt::print("dataset    {}\n", prefix);
  static const char* names[9] = {"?", "uint8", "int8", "int16", "int32", "int64", "float64", "float32", "uint16"};
  const int code = ds.dtype_code();
  fmt::print("dtype      {} (code {})\n", (code >= 1 && code <= 8) ? names[code] : "?", code);
  fmt::print("sequences  {}\ndocuments  {}\ntokens     {}\n", ds.num_sequences(), ds.num_documents(), ds.num_tokens());
  if (lens.empty()) return 0;
  const auto [mn, mx] = std::minmax_element(lens.begin(), lens.end());
  fmt::print("length     min {} max {} mean {:.1f}\n", *mn, *mx,
             static_cast<double>(ds.num_tokens()) / static_cast<double>(lens.size()));
  // Power-of-two buckets: [0,1), [1,2), [2,4), [4,8), ...
  std::vector<int64_t> buckets(33, 0);
  for (int32_t l : lens) {
    int b = 0;
    while (b < 32 && (int64_t{1} << b) <= l) ++b;
    buckets[b]++;
  }
  fmt::print("sequence length histogram (tokens: sequences)\n");
  for (int b = 0; b < 33; ++b) {
    if (!buckets[b]) continue;
    const int64_t lo = b == 0 ? 0 : (int64_t{1} << (b - 1)), hi = int64_t{1} << b;
    fmt::print("  [{:>9}, {:>9})  {:>10}  {:5.1f}%\n", lo, hi, buckets[b],
               100.0 * static_cast<double>(buckets[b]) / static_cast<double>(lens.size()));
  }
  return 0;
}

int doc(const std::string& prefix, int64_t index, bool ids, const std::string& vocab, const std::string& merges) {
  const IndexedDataset ds = IndexedDataset::open(prefix);
  check(index >= 0 && index < ds.num_documents(), "--index {} outside [0, {}) documents of {}", index,
        ds.num_documents(), prefix);
  const auto di = ds.document_indices();
  std::vector<int32_t> toks;
  for (int64_t s = di[index]; s < di[index + 1]; ++s) {
    auto seq = ds.sequence(s);
    toks.insert(toks.end(), seq.begin(), seq.end());
  }
  if (ids) {
    for (size_t i = 0; i < toks.size(); ++i) fmt::print("{}{}", i ? " " : "", toks[i]);
    fmt::print("\n");
    return 0;
  }
  const GPT2Tokenizer tok = load_tokenizer(vocab, merges);
  const std::string text = tok.decode(toks);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (text.empty() || text.back() != '\n') std::fputc('\n', stdout);
  return 0;
}

struct SampleFlags {
  DataArgs args;
  std::optional<int64_t> counts[3];
  bool fingerprint = false, decode = false;
  std::optional<int64_t> limit;
  std::string vocab, merges;
};

int samples(SampleFlags& f) {
  const GPTDatasets ds = build_gpt_datasets(f.args, {f.counts[0], f.counts[1], f.counts[2]});
  std::optional<GPT2Tokenizer> tok;
  if (f.decode) tok = load_tokenizer(f.vocab, f.merges);
  const std::shared_ptr<const SampleDataset> splits[3] = {ds.train, ds.valid, ds.test};
  std::vector<int32_t> w(static_cast<size_t>(f.args.seq_length) + 1);
  std::string line;
  for (int k = 0; k < 3; ++k) {
    if (!splits[k]) continue;
    const char* name = split_name(k);
    const int64_t n = f.limit ? std::min(*f.limit, splits[k]->size()) : splits[k]->size();
    if (!f.fingerprint) fmt::print("# {}: {} ({} samples shown)\n", name, splits[k]->describe(), n);
    for (int64_t i = 0; i < n; ++i) {
      splits[k]->read_sample(i, w);
      line.clear();
      if (f.fingerprint) {
        fmt::format_to(std::back_inserter(line), "{} {} {:016x}\n", name, i, fnv1a64_tokens(w));
      } else if (f.decode) {
        fmt::format_to(std::back_inserter(line), "=== {} {}\n{}\n", name, i, tok->decode(w));
      } else {
        fmt::format_to(std::back_inserter(line), "{} {}", name, i);
        for (int32_t t : w) fmt::format_to(std::back_inserter(line), " {}", t);
        line += '\n';
      }
      std::fwrite(line.data(), 1, line.size(), stdout);
    }
  }
  return 0;
}

int body(int argc, char** argv) {
  CLI::App app{"inspect_data: look at tokenized datasets and at the samples training will see"};
  app.require_subcommand(1);

  std::string prefix;
  auto* sum = app.add_subcommand("summary", "dtype, sequences, documents, tokens, length histogram");
  sum->add_option("--data-path", prefix, "dataset prefix (P.bin / P.idx)")->required();

  int64_t index = 0;
  bool ids = false;
  std::string vocab, merges;
  auto* dc = app.add_subcommand("doc", "decode document i");
  dc->add_option("--data-path", prefix, "dataset prefix")->required();
  dc->add_option("--index", index, "document number")->required();
  dc->add_flag("--ids", ids, "print token ids instead of text");
  dc->add_option("--vocab-file", vocab, "GPT-2 vocab.json (default: the one in the source tree)");
  dc->add_option("--merge-file", merges, "GPT-2 merges.txt");

  SampleFlags f;
  std::string split;
  int64_t seed = 1234;
  auto* sm = app.add_subcommand("samples", "every sample of every split, in Megatron's order");
  sm->add_option("--data-path", f.args.data_path, "prefixes, or weight prefix pairs");
  sm->add_option("--train-data-path", f.args.train_data_path, "train split blend");
  sm->add_option("--valid-data-path", f.args.valid_data_path, "valid split blend");
  sm->add_option("--test-data-path", f.args.test_data_path, "test split blend");
  sm->add_option("--split", split, "train/valid/test proportions (default \"969, 30, 1\")");
  sm->add_option("--seq-length", f.args.seq_length, "sequence length S")->required();
  sm->add_option("--seed", seed, "shuffle seed (default 1234)");
  sm->add_option("--data-cache-path", f.args.data_cache_path, "index cache directory");
  sm->add_option("--mid-level-dataset-surplus", f.args.mid_level_dataset_surplus, "blend surplus (0.005)");
  sm->add_option("--train-samples", f.counts[0], "samples asked of the train split (default: one epoch)");
  sm->add_option("--valid-samples", f.counts[1], "samples asked of the valid split (default: one epoch)");
  sm->add_option("--test-samples", f.counts[2], "samples asked of the test split (default: one epoch)");
  auto* fp = sm->add_flag("--fingerprint", f.fingerprint, "one line per sample: split index fnv1a64");
  sm->add_flag("--decode", f.decode, "print samples as text")->excludes(fp);
  sm->add_option("--limit", f.limit, "at most this many samples per split");
  bool verbose = false;
  sm->add_flag("--verbose", verbose, "log how each index was built or loaded (mixed into stdout)");
  sm->add_option("--vocab-file", f.vocab, "GPT-2 vocab.json for --decode");
  sm->add_option("--merge-file", f.merges, "GPT-2 merges.txt for --decode");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (*sum) return summary(prefix);
  if (*dc) return doc(prefix, index, ids, vocab, merges);
  check(seed >= 0 && seed <= 0xffffffffLL, "--seed {} must be in [0, 2^32)", seed);
  f.args.seed = static_cast<uint32_t>(seed);
  if (!split.empty()) f.args.split = split;
  if (!verbose) log::set_level(log::Level::warn);  // keep stdout to the samples
  return samples(f);
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("inspect_data", body, argc, argv); }
