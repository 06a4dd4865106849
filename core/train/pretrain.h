// The whole of pretrain_gpt for one process: flags -> backend, tokenizer, datasets, model, AdamW,
// Trainer. apps/pretrain_gpt.cpp is a thin main around pretrain_gpt_main.
#pragma once

#include "core/config/train_args.h"
#include "data/loader/gpt_data.h"
#include "kernels/backend.h"

#include <memory>
#include <string>

namespace gptrain {

// --device auto|cpu|cuda and the compute dtype (--bf16/--fp16) -> a backend with `options`. auto picks
// cuda when the build has it and a device opens, else cpu.
std::unique_ptr<Backend> make_training_backend(const std::string& device, DType dtype,
                                               const BackendOptions& options = {});

// The training backend for `args`: --device and the compute dtype as above, with --attention-backend
// and --deterministic-mode as its BackendOptions. The CPU backend has one attention implementation
// (make_backend refuses anything but --attention-backend auto) and is always deterministic.
std::unique_ptr<Backend> make_training_backend(const TrainArgs& args);

// Vocabulary size and end-of-document id from the tokenizer flags (GPT2BPETokenizer; --vocab-size
// overrides the size for --mock-data).
struct VocabInfo {
  int vocab_size = 0;
  int32_t eod_token = 0;
};
VocabInfo vocab_info(const TrainArgs& args);

// Train/valid/test datasets from the data flags (or --mock-data); `sync` lets rank 0 build the index
// cache for the other ranks (parallel/train/pretrain_parallel.cpp).
GPTDatasets training_datasets(const TrainArgs& args, const VocabInfo& vocab, const BuildSync& sync = {});

// The flags are parsed by the app, which routes --dry-run to parallel/plan/dry_run.h first.
int pretrain_gpt_main(const TrainArgs& args);

}  // namespace gptrain
