// The GPU this process drives in a training job: none for the cpu backend, else its local rank's among
// the GPUs it sees (choose_local_device, launch_env.h), with a warning when ranks of a node share one.
#pragma once

#include "core/config/train_args.h"
#include "parallel/launch/launch_env.h"

namespace gptrain::parallel {

// The device index to open (0 when the flags plan the cpu backend or no GPU is visible: opening it then
// reports the error).
int local_gpu(const TrainArgs& args, const LaunchEnv& env);

}  // namespace gptrain::parallel
