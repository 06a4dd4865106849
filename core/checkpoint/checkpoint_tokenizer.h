// The tokenizer a checkpoint was trained with, for the apps that read a checkpoint (generate) or are
// pointed at one (inspect_data --load): pretrain_gpt records every flag in the metadata's args, so the
// tokenizer flags found there are parsed again with pretrain_gpt's table.
#pragma once

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

}  // namespace gptrain
