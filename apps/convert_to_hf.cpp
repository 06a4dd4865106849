// convert_to_hf: a gptrain checkpoint (any TP/PP layout) -> a Hugging Face model directory that
// AutoModelForCausalLM / AutoTokenizer.from_pretrained(dir) load offline.
//   convert_to_hf --load ckpts/ --output hf/ [--ckpt-step N] [--dtype fp32|bf16|fp16]
//                 [--max-shard-size 5GB] [--vocab-file vocab.json --merge-file merges.txt]
#include "core/common/error.h"
#include "core/config/flag_table.h"
#include "core/config/train_args.h"
#include "core/hf/convert.h"
#include "core/safetensors/sharded.h"

namespace {

int body(int argc, char** argv) {
  gptrain::hf::ToHfOptions o;
  std::string dtype = "fp32", max_shard = "5GB";
  gptrain::TrainArgs a;  // the flags shared with pretrain_gpt, bound from its table
  gptrain::FlagTable t = gptrain::train_flag_table(a).only({"load", "ckpt-step", "vocab-file", "merge-file"});
  t.group("convert_to_hf");
  t.value("output", &o.output_dir, "output directory (created; a previous conversion there is replaced)");
  t.choice("dtype", &dtype, {"fp32", "bf16", "fp16"}, "weight dtype");
  t.value("max-shard-size", &max_shard, "shard the weights above this size (5GB, 500MB, 2GiB, bytes)");
  t.value("tokenizer-dir", &o.tokenizer_dir, "copy tokenizer files from this Hugging Face directory instead");
  t.flag("no-tokenizer", &o.no_tokenizer, "write no tokenizer files");
  t.require("load");
  t.require("output");
  if (!t.parse("convert_to_hf", argc, argv)) return 0;
  o.load_dir = *a.checkpoint.load;
  if (const auto step = a.checkpoint.ckpt_step) {
    gptrain::check(*step >= 0, "--ckpt-step must be >= 0 (got {})", *step);
    o.step = gptrain::checkpoint::Step::at(*step);
  }
  o.vocab_file = a.tokenizer.vocab_file.value_or("");
  o.merge_file = a.tokenizer.merge_file.value_or("");
  o.dtype = dtype == "fp32"   ? gptrain::safetensors::DType::F32
            : dtype == "bf16" ? gptrain::safetensors::DType::BF16
                              : gptrain::safetensors::DType::F16;
  o.max_shard_bytes = gptrain::safetensors::parse_size(max_shard, "--max-shard-size");
  if (o.no_tokenizer && (!o.tokenizer_dir.empty() || !o.vocab_file.empty() || !o.merge_file.empty()))
    gptrain::fail("--no-tokenizer cannot be combined with --tokenizer-dir, --vocab-file or --merge-file");
  if (!o.tokenizer_dir.empty() && (!o.vocab_file.empty() || !o.merge_file.empty()))
    gptrain::fail("--tokenizer-dir cannot be combined with --vocab-file/--merge-file");
  gptrain::hf::convert_to_hf(o);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("convert_to_hf", body, argc, argv); }
