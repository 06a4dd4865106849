// pretrain_gpt --dry-run (a gptrain extension): every check a run makes before it allocates the
// model, then the parameter counts and the memory plan of each pipeline rank of the TP x PP x DP
// layout, all computed from configs: ParamLayout for the parameters, StageActivations' measuring
// pass for one micro-batch's activations, the pipeline schedule for how many micro-batches each
// model chunk holds at once. Nothing is allocated on a device, no device is opened (the plan is for
// the compute dtype of --bf16/--fp16), and no data is read, so full-size presets plan instantly on
// any machine. Counted as the memory plan printed before step 1 (core/train/memory_plan.h):
// parameters, fp32 gradients, AdamW state (its DP shard with --use-distributed-optimizer),
// activations; communication buffers are not.
#pragma once

#include "core/config/train_args.h"

namespace gptrain::parallel {

// Prints the plan through the logger when `prints` (rank 0 of a job) and returns 0; throws Error
// naming the flag when the configuration is invalid.
int pretrain_gpt_dry_run(const TrainArgs& args, bool prints = true);

}  // namespace gptrain::parallel
