// The Megatron pretraining flags that gptrain has no field for, beyond the few that train_flags.cpp
// names itself: accepted without effect (with what gptrain does instead) or refused (with what is
// missing), by Megatron's argument group. Bound once, by train_flag_table.
#pragma once

#include "core/config/flag_table.h"

namespace gptrain {

void bind_megatron_without_field(FlagTable& t);

}  // namespace gptrain
