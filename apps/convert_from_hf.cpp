// convert_from_hf: a Hugging Face model directory (safetensors weights) -> a gptrain checkpoint
// that `pretrain_gpt --load <save> --finetune` continues from, at any TP/PP.
//   convert_from_hf --load hf/ --save ckpts/ [--iteration 0] [--make-vocab-size-divisible-by 128]
//                   [--tensor-model-parallel-size 1]
#include "core/common/error.h"
#include "core/config/flag_table.h"
#include "core/hf/convert.h"

namespace {

int body(int argc, char** argv) {
  gptrain::hf::FromHfOptions o;
  int64_t iteration = -1;
  gptrain::FlagTable t;
  t.group("convert_from_hf");
  t.value("load", &o.hf_dir, "Hugging Face model directory (config.json + safetensors)");
  t.value("save", &o.save_dir, "gptrain checkpoint directory to write");
  t.value("iteration", &iteration, "save as iter_%07d of this iteration (default: release/)");
  t.value("make-vocab-size-divisible-by", &o.make_vocab_size_divisible_by,
          "pad the vocabulary to a multiple of this times the TP size (Megatron default 128)");
  t.value("tensor-model-parallel-size", &o.tensor_model_parallel_size,
          "TP size the vocabulary padding is computed for");
  t.value("vocab-file", &o.vocab_file, "record this GPT-2 vocab.json in the checkpoint args (default: the HF dir's)");
  t.value("merge-file", &o.merge_file, "record this merges.txt in the checkpoint args (default: the HF dir's)");
  t.require("load");
  t.require("save");
  if (!t.parse("convert_from_hf", argc, argv)) return 0;
  if (t.given("iteration")) {
    if (iteration < 0) gptrain::fail("--iteration must be >= 0 (got {})", iteration);
    o.step = gptrain::checkpoint::Step::at(iteration);
  }
  gptrain::hf::convert_from_hf(o);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("convert_from_hf", body, argc, argv); }
