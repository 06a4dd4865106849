// The tokenizer a checkpoint was trained with, for the apps that read a checkpoint (generate) or are
// pointed at one (inspect_data --load): pretrain_gpt records every flag in the metadata's args, so the
// tokenizer flags found there are parsed again with pretrain_gpt's table. And pretrain_gpt's check that a
// checkpoint to load has the run's vocabulary.
#pragma once

#include "core/checkpoint/checkpoint.h"
#include "core/config/flag_table.h"
#include "core/config/train_args.h"

#include <cstdint>
#include <optional>
#include <string>

namespace gptrain {

// When t was given none of the tokenizer flags (with_tokenizer_flags) and a.checkpoint.load is set,
// fills a.tokenizer from that checkpoint's metadata (step: --ckpt-step, else the tracker's). Returns
// whether it did. A checkpoint without the tokenizer flags in its args (e.g. from convert_from_hf)
// leaves the defaults.
bool tokenizer_from_checkpoint(const FlagTable& t, TrainArgs& a, std::optional<int64_t> step);

// Refuses a checkpoint whose recorded vocabulary (metadata.json's model.vocab_size) is not the run's
// `vocab_size`, naming both vocabularies (real and padded sizes) and both tokenizers: its word-embedding
// and output rows belong to other tokens, and a load would drop or invent rows without a word (rows are
// re-padded only for another TP size). As in Megatron, which refuses the shape mismatch, --finetune does not
// change this. A checkpoint whose vocabulary is its own padded size (a Hugging Face config's padded
// vocab_size) loads into a smaller tokenizer padded to the same table, with a warning. A checkpoint that
// records no vocabulary is not checked.
void check_checkpoint_vocabulary(const checkpoint::Checkpoint& ck, const TokenizerArgs& run, int64_t vocab_size,
                                 int64_t padded_vocab_size);

}  // namespace gptrain
