// convert_from_hf: a Hugging Face model directory (safetensors weights) -> a gptrain checkpoint
// that `pretrain_gpt --load <save> --finetune` continues from, at any TP/PP.
//   convert_from_hf --load hf/ --save ckpts/ [--iteration 0] [--make-vocab-size-divisible-by 128]
//                   [--tensor-model-parallel-size 1] [--apply-layernorm-1p]
#include "core/common/error.h"
#include "core/config/flag_table.h"
#include "core/config/train_args.h"
#include "core/hf/convert.h"

namespace {

int body(int argc, char** argv) {
  gptrain::hf::FromHfOptions o;
  int64_t iteration = -1;
  gptrain::TrainArgs a;  // the flags shared with pretrain_gpt, bound from its table
  gptrain::FlagTable t = gptrain::train_flag_table(a).only(
      {"make-vocab-size-divisible-by", "tensor-model-parallel-size", "vocab-file", "merge-file", "apply-layernorm-1p"});
  t.group("convert_from_hf");
  t.value("load", &o.hf_dir, "Hugging Face model directory (config.json + safetensors)");
  t.value("save", &o.save_dir, "gptrain checkpoint directory to write");
  t.value("iteration", &iteration, "save as iter_%07d of this iteration (default: release/)");
  t.require("load");
  t.require("save");
  if (!t.parse("convert_from_hf", argc, argv)) return 0;
  // The vocabulary is padded for this TP size; the tokenizer files are recorded in the checkpoint's args
  // (default: the HF directory's).
  o.make_vocab_size_divisible_by = a.model.make_vocab_size_divisible_by;
  o.tensor_model_parallel_size = a.parallel.tensor_model_parallel_size;
  o.vocab_file = a.tokenizer.vocab_file.value_or("");
  o.merge_file = a.tokenizer.merge_file.value_or("");
  o.apply_layernorm_1p = a.model.apply_layernorm_1p;  // the checkpoint is for runs with this flag
  if (t.given("iteration")) {
    if (iteration < 0) gptrain::fail("--iteration must be >= 0 (got {})", iteration);
    o.step = gptrain::checkpoint::Step::at(iteration);
  }
  gptrain::hf::convert_from_hf(o);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("convert_from_hf", body, argc, argv); }
