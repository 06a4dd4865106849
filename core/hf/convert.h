// The two conversions behind apps/convert_to_hf and apps/convert_from_hf. Both stream: one output
// tensor is produced (read, reshuffled, converted) and written at a time, so peak memory is a few
// copies of the largest tensor, not of the model.
#pragma once

#include "core/checkpoint/checkpoint.h"
#include "core/safetensors/dtype.h"

#include <cstdint>
#include <optional>
#include <string>

namespace gptrain::hf {

struct ConvertStats {
  int64_t tensors = 0;
  uint64_t tensor_bytes = 0;  // data bytes written
  double seconds = 0.0;       // wall time of the tensor loop (read + reshuffle + write)
  double mb_per_s() const { return seconds > 0 ? double(tensor_bytes) / 1e6 / seconds : 0.0; }
};

struct ToHfOptions {
  std::string load_dir;                                // --load
  std::optional<checkpoint::Step> step;                // --ckpt-step; nullopt: the tracker's
  std::string output_dir;                              // --output
  safetensors::DType dtype = safetensors::DType::F32;  // --dtype
  uint64_t max_shard_bytes = 5'000'000'000ull;         // --max-shard-size
  std::string vocab_file, merge_file;                  // GPT-2 BPE files (default: the checkpoint's args)
  std::string tokenizer_dir;                           // copy tokenizer files from a HF directory instead
  bool no_tokenizer = false;                           // --no-tokenizer: weights and configs only
};
ConvertStats convert_to_hf(const ToHfOptions& o);

struct FromHfOptions {
  std::string hf_dir;                                        // --load
  std::string save_dir;                                      // --save
  checkpoint::Step step = checkpoint::Step::release_step();  // --iteration N (else release)
  int make_vocab_size_divisible_by = 128;                    // Megatron's default
  int tensor_model_parallel_size = 1;                        // vocabulary padded for this TP size
  std::string vocab_file, merge_file;                        // recorded in args (default: the HF dir's files)
  bool apply_layernorm_1p = false;  // --apply-layernorm-1p: store the norm weights as gamma - 1
};
ConvertStats convert_from_hf(const FromHfOptions& o);

}  // namespace gptrain::hf
