// inspect_data: see what the model sees.
//   inspect_data summary --data-path P                      dtype, counts, sequence length histogram
//   inspect_data doc --data-path P --index I [--ids]        decode document I with the GPT-2 tokenizer
//       (or the --tokenizer-* flags, or with --load CKPT the tokenizer that checkpoint was trained with)
//   inspect_data samples --data-path ... --seq-length S [--split ...] [--seed N] [--train-samples N]
//       [--valid-samples N] [--test-samples N] [--fingerprint | --decode] [--limit N]
//     every sample of every split in Megatron's order; --fingerprint prints "split index hex" with the
//     FNV-1a-64 of the S+1 token window (tokens as 4-byte little-endian uint32), so runs and tools can
//     be compared sample by sample.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "core/common/error.h"
#include "core/common/log.h"
#include "core/config/flag_table.h"
#include "core/config/train_args.h"
#include "data/gpt_dataset/split.h"
#include "data/indexed/indexed_dataset.h"
#include "data/loader/gpt_data.h"
#include "core/checkpoint/checkpoint_tokenizer.h"
#include "core/config/tokenizer_spec.h"

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

std::unique_ptr<Tokenizer> load_tokenizer(const TokenizerArgs& t) { return make_tokenizer(tokenizer_spec(t)); }

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

int doc(const std::string& prefix, int64_t index, bool ids, const TokenizerArgs& tokenizer) {
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
  const std::string text = load_tokenizer(tokenizer)->decode(toks);
  std::fwrite(text.data(), 1, text.size(), stdout);
  if (text.empty() || text.back() != '\n') std::fputc('\n', stdout);
  return 0;
}

struct SampleFlags {
  TrainArgs args;  // the data flags, --seq-length, --seed and the tokenizer files, as pretrain_gpt binds them
  std::optional<int64_t> counts[3];
  bool fingerprint = false, decode = false;
  std::optional<int64_t> limit;
};

int samples(SampleFlags& f) {
  const int64_t seq_length = *f.args.model.seq_length;
  const GPTDatasets ds = build_gpt_datasets(f.args.data, seq_length, static_cast<uint32_t>(f.args.training.seed),
                                            {f.counts[0], f.counts[1], f.counts[2]});
  std::unique_ptr<Tokenizer> tok;
  if (f.decode) tok = load_tokenizer(f.args.tokenizer);
  const std::shared_ptr<const SampleDataset> splits[3] = {ds.train, ds.valid, ds.test};
  std::vector<int32_t> w(static_cast<size_t>(seq_length) + 1);
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

// The one --data-path prefix of the summary and doc commands.
const std::string& one_prefix(const TrainArgs& a) {
  check(a.data.data_path.size() == 1, "--data-path: give one dataset prefix (P for P.bin / P.idx), got {} values",
        a.data.data_path.size());
  return a.data.data_path[0];
}

int body(int argc, char** argv) {
  const std::string usage =
      "usage: inspect_data summary|doc|samples [flags]  (inspect_data <command> --help lists the flags)";
  check(argc >= 2, "{}", usage);
  const std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h") {
    std::puts(usage.c_str());
    return 0;
  }
  // Each command parses the flags after its name; training flags keep pretrain_gpt's names and meanings.
  SampleFlags f;
  TrainArgs& a = f.args;
  FlagTable all = train_flag_table(a);
  if (cmd == "summary") {
    FlagTable t = all.only({"data-path"});
    t.require("data-path");
    if (!t.parse("inspect_data summary", argc - 1, argv + 1)) return 0;
    return summary(one_prefix(a));
  }
  if (cmd == "doc") {
    int64_t index = 0;
    bool ids = false;
    FlagTable t = all.only(with_tokenizer_flags({"data-path", "load", "ckpt-step"}));
    t.group("inspect_data doc");
    t.value("index", &index, "document number");
    t.flag("ids", &ids, "print token ids instead of text");
    t.require("data-path");
    t.require("index");
    if (!t.parse("inspect_data doc", argc - 1, argv + 1)) return 0;
    tokenizer_from_checkpoint(t, a, a.checkpoint.ckpt_step);  // --load without --tokenizer-* flags
    return doc(one_prefix(a), index, ids, a.tokenizer);
  }
  check(cmd == "samples", "unknown command '{}'; {}", cmd, usage);
  bool verbose = false;
  FlagTable t = all.only(
      with_tokenizer_flags({"data-path", "train-data-path", "valid-data-path", "test-data-path", "split", "seq-length",
                            "seed", "data-cache-path", "mid-level-dataset-surplus", "load", "ckpt-step"}));
  t.group("inspect_data samples");
  t.value("train-samples", &f.counts[0], "samples asked of the train split (default: one epoch)");
  t.value("valid-samples", &f.counts[1], "samples asked of the valid split (default: one epoch)");
  t.value("test-samples", &f.counts[2], "samples asked of the test split (default: one epoch)");
  t.flag("fingerprint", &f.fingerprint, "one line per sample: split index fnv1a64");
  t.flag("decode", &f.decode, "print samples as text");
  t.value("limit", &f.limit, "at most this many samples per split");
  t.flag("verbose", &verbose, "log how each index was built or loaded (mixed into stdout)");
  t.require("seq-length");
  if (!t.parse("inspect_data samples", argc - 1, argv + 1)) return 0;
  tokenizer_from_checkpoint(t, a, a.checkpoint.ckpt_step);
  check(!(f.fingerprint && f.decode), "--fingerprint and --decode exclude each other");
  check(*a.model.seq_length > 0, "--seq-length must be > 0");
  check(a.training.seed >= 0 && a.training.seed <= 0xffffffffLL, "--seed {} must be in [0, 2^32)", a.training.seed);
  if (!verbose) log::set_level(log::Level::warn);  // keep stdout to the samples
  return samples(f);
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("inspect_data", body, argc, argv); }
