// The one registry of Megatron pretraining flags that gptrain has no field for: accepted without effect
// (with what gptrain does instead), accepted for the values gptrain has, or refused (with what is
// missing), by Megatron's argument group. Bound once, by train_flag_table, after every flag with a field.
#pragma once

#include "core/config/flag_table.h"

namespace gptrain {

void bind_megatron_only_flags(FlagTable& t);

}  // namespace gptrain
