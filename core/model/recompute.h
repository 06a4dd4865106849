// Activation recomputation (Megatron's --recompute-* flags): which activations a stage keeps for
// backward and which it recomputes there. The layer maths does not know about it: GptStage replays
// the layer functions (or the parts of one, layers.h) before each backward, and StageActivations maps
// the activations that are recomputed onto a replay workspace shared by every micro-batch in flight,
// so the per-micro-batch arena holds only what is kept.
//   full, uniform N:  the local layers of each model chunk in groups of N; only each group's input is
//                     kept, and the group's forward is replayed before its backward
//   full, block N:    the first N local layers of each chunk, each alone as above; the others keep all
//   (--distribute-saved-activations: a kept group input is split over the TP ranks and gathered back)
//   selective:        per layer, the modules named by --recompute-modules are recomputed from their kept
//                     input (core_attn: attention output and softmax statistics from qkv; mlp: fc1 and the
//                     activation from the MLP input of dense layers; layernorm: the norm outputs from their
//                     inputs; moe: an MoE MLP's router, plan, expert and shared-expert activations from its
//                     input; moe_act: the expert activations from their fc1 outputs); with
//                     sequence parallelism the norm outputs are kept only as this rank's rows and gathered
//                     again (as Megatron does)
// Dropout masks are keyed by (micro-batch seed, layer, site), so a replay draws the same masks and the
// gradients are bit for bit those without recomputation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gptrain {

enum class RecomputeGranularity : uint8_t { None, Full, Selective };
enum class RecomputeMethod : uint8_t { Uniform, Block };

struct RecomputeConfig {
  RecomputeGranularity granularity = RecomputeGranularity::None;
  RecomputeMethod method = RecomputeMethod::Uniform;  // full only
  int num_layers = 0;                                 // full only: N
  // full only, TP > 1 without sequence parallelism: each TP rank keeps 1/TP of every kept group input
  // (the same on all of them) and the replay gathers it back first (--distribute-saved-activations)
  bool distribute_saved_activations = false;
  // selective only: the recomputed modules
  bool core_attn = false;
  bool mlp = false;
  bool layernorm = false;
  bool moe = false;      // the whole MoE MLP of MoE layers, from its input (router, experts, shared expert)
  bool moe_act = false;  // the experts' activation from their fc1 output

  bool full() const { return granularity == RecomputeGranularity::Full; }
  bool selective() const { return granularity == RecomputeGranularity::Selective; }
};

// "none", "selective (core_attn, mlp)", "full uniform 4", "full block 2": for plans and logs.
std::string describe_recompute(const RecomputeConfig& r);

// The checkpoint groups of a model chunk with `local_layers` layers under full recomputation: per local
// layer, the first local layer of its group, or -1 when the layer keeps its activations.
std::vector<int> recompute_group_first(const RecomputeConfig& r, int local_layers);
// Layers in the largest group (the replay workspace holds that many layers); 0 without full recompute.
int recompute_max_group(const RecomputeConfig& r, int local_layers);

}  // namespace gptrain
