#include "core/config/offload_args.h"

#include "core/common/error.h"

namespace gptrain {

int cpu_offload_layers_from_args(const ActivationOffloadArgs& a) {
  const int n = a.cpu_offloading_num_layers;
  check(n >= 0, "--cpu-offloading-num-layers must be >= 0 (got {})", n);
  check(!a.cpu_offloading || n > 0,
        "--cpu-offloading needs --cpu-offloading-num-layers N >= 1: the first N layers' activations go to host memory");
  return n;  // n < --num-layers is the stage's rule (StageConfig::check_stage)
}

}  // namespace gptrain
