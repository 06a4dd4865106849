// --fp8-format and the flags of its recipe (core/model/fp8_config.h): checked as Megatron checks them,
// with what gptrain does not implement refused by name.
#pragma once

#include "core/config/train_args.h"
#include "core/model/fp8_config.h"

namespace gptrain {

// The run's FP8 configuration (enabled only with --fp8-format); throws Error naming the flag otherwise.
Fp8Config fp8_config_from_args(const TrainArgs& a);

}  // namespace gptrain
