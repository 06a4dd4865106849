#include "parallel/launch/local_gpu.h"

#include "core/common/log.h"
#include "core/train/setup.h"
#include "kernels/backend.h"

namespace gptrain::parallel {

int local_gpu(const TrainArgs& args, const LaunchEnv& env) {
  if (planned_backend_name(args) != "cuda") return 0;
  const int visible = cuda_device_count();
  if (visible < 1) return 0;
  const LocalDevice d = choose_local_device(env, visible);
  if (d.shared)
    log::warn(
        "{} processes on this node share {} GPU(s): local rank {} uses GPU {} (NCCL needs one GPU per rank; "
        "--distributed-backend mpi allows sharing)",
        env.local_size, visible, env.local_rank, d.index);
  return d.index;
}

}  // namespace gptrain::parallel
