// merge_datasets: Megatron's tools/merge_datasets.py. Concatenates every indexed dataset (P.bin +
// P.idx) in the --input directory, in sorted prefix order, into --output-prefix.bin/.idx. All inputs
// must share one dtype; the output appears only when complete (temporary names, then rename).
//
//   merge_datasets --input dir_of_datasets --output-prefix merged
#include "core/common/error.h"
#include "core/common/log.h"
#include "core/config/flag_table.h"
#include "data/indexed/indexed_dataset.h"

#include <algorithm>
#include <filesystem>
#include <set>

namespace {

int body(int argc, char** argv) {
  namespace fs = std::filesystem;
  using namespace gptrain;
  std::string input, output_prefix;
  FlagTable t;
  t.group("merge_datasets");
  t.value("input", &input, "Directory holding the datasets (P.bin + P.idx pairs) to merge");
  t.value("output-prefix", &output_prefix, "Output path without .bin/.idx");
  t.unsupported("multimodal", "merging multimodal datasets is not supported");
  t.require("input");
  t.require("output-prefix");
  if (!t.parse("merge_datasets", argc, argv)) return 0;
  if (!fs::is_directory(input)) fail("--input {}: not a directory or does not exist", input);
  const fs::path out_dir = fs::path(output_prefix).parent_path();
  if (!out_dir.empty() && !fs::is_directory(out_dir))
    fail("--output-prefix {}: directory {} does not exist", output_prefix, out_dir.string());

  std::set<std::string> prefixes;  // sorted by bytes, like Python's sorted()
  for (const auto& e : fs::directory_iterator(input)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".bin" && ext != ".idx") continue;
    const fs::path prefix = e.path().parent_path() / e.path().stem();
    const std::string pair = prefix.string() + (ext == ".idx" ? ".bin" : ".idx");
    if (!fs::is_regular_file(pair)) fail("{}: has no matching {}", e.path().string(), pair);
    prefixes.insert(prefix.string());
  }
  if (prefixes.empty()) fail("--input {}: no .bin/.idx datasets found", input);
  // Writing over an input would replace it with the merge (the rename at the end succeeds).
  const fs::path out_key = fs::weakly_canonical(fs::absolute(output_prefix));
  for (const std::string& p : prefixes)
    if (fs::weakly_canonical(fs::absolute(p)) == out_key)
      fail("--output-prefix {}: is one of the inputs ({}.bin/.idx); choose another output", output_prefix, p);
  const IndexDType dtype = IndexedDataset::open(*prefixes.begin()).dtype();
  IndexedDatasetWriter writer(output_prefix, dtype);
  for (const std::string& p : prefixes) {
    writer.add_dataset(p);
    log::info("merge_datasets: + {}", p);
  }
  writer.finalize();
  log::info("merge_datasets: {} datasets -> {}.bin/.idx: {} documents, {} sequences, {} tokens ({})", prefixes.size(),
            output_prefix, writer.num_documents(), writer.num_sequences(), writer.num_tokens(),
            index_dtype_name(dtype));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("merge_datasets", body, argc, argv); }
