// Megatron's activation offloading flags (--cpu-offloading, --cpu-offloading-num-layers), validated and
// turned into the model's cpu_offload_layers (core/model/activation_offload.h). Optimizer-state
// offloading (--optimizer-cpu-offload, --optimizer-offload-fraction) sits with the optimizer's placement
// in ParallelArgs.
#pragma once

namespace gptrain {

struct ActivationOffloadArgs {
  bool cpu_offloading = false;        // Megatron's TransformerConfig switch
  int cpu_offloading_num_layers = 0;  // N: the first N layers' activations go to host memory
};

// Megatron's rules: N > 0 turns --cpu-offloading on; N >= 0 (N < --num-layers is checked with the stage,
// StageConfig::check_stage). gptrain also refuses --cpu-offloading with no layer to offload. Unlike
// Megatron, pipeline parallelism and recomputation combine with it (the first N layers of the model,
// wherever they run; what recomputation keeps of them is what goes to the host). Returns N (0: no
// offloading); throws Error naming the flag.
int cpu_offload_layers_from_args(const ActivationOffloadArgs& a);

}  // namespace gptrain
