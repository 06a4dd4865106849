// pretrain_gpt --dry-run (a gptrain extension): every check a run makes before it allocates the
// model, then the parameter counts and the memory plan the run itself prints before step 1: every
// pipeline stage's MemoryPlan (memory_plan.h) for the TP x PP x DP layout, computed from configs alone, so nothing is
// allocated, no device is opened (the plan is for the compute dtype of
// --bf16/--fp16), and neither data nor a --load checkpoint is read: full-size presets plan in a
// fraction of a second on any machine.
#pragma once

#include "core/config/train_args.h"

namespace gptrain::parallel {

// Prints the plan through the logger when `prints` (rank 0 of a job) and returns 0; throws Error
// naming the flag when the configuration is invalid.
int pretrain_gpt_dry_run(const TrainArgs& args, bool prints = true);

}  // namespace gptrain::parallel
