#include "core/config/offload_args.h"

#include "core/common/error.h"

namespace gptrain {

int cpu_offload_layers_from_args(const ActivationOffloadArgs& a, int num_layers) {
  const int n = a.cpu_offloading_num_layers;
  check(n >= 0, "--cpu-offloading-num-layers must be >= 0 (got {})", n);
  check(!a.cpu_offloading || n > 0,
        "--cpu-offloading needs --cpu-offloading-num-layers N >= 1: the first N layers' activations go to host memory");
  check(n < num_layers,
        "--cpu-offloading-num-layers {}: CPU offloading can be done only for layers less than --num-layers {} (as "
        "Megatron: the last layer's activations are needed at once by backward)",
        n, num_layers);
  return n;
}

}  // namespace gptrain
