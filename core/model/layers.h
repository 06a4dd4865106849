// The layers of a GPT stage as forward/backward function pairs over the Backend ops. Each takes the
// stage context (backend, hooks, config, local sizes), pointers to its weights (compute dtype) and
// fp32 gradients (stage_tensors.h), and the micro-batch's StageActivations. Backward functions accumulate weight
// gradients (+=) and leave the input gradient as documented per function.
#pragma once

#include "core/model/model_config.h"
#include "core/model/fp8_linear.h"
#include "core/model/parallel_hooks.h"
#include "core/model/stage_activations.h"
#include "core/model/stage_tensors.h"
#include "kernels/backend.h"

namespace gptrain {

struct LayerContext {
  Backend& be;
  ParallelHooks& hooks;
  const StageConfig& c;
  const LocalSizes& s;
  // --moe-router-enable-expert-bias: the stage's expert biases, (local layers, E) fp32 on the device (row li
  // is local layer li's; rows of dense layers unused); null without it.
  const float* expert_bias = nullptr;
  // --fp8-format: the stage's FP8 scaling state and scratch (fp8_linear.h); null without it.
  const Fp8StageState* fp8 = nullptr;
};

// The weights (compute dtype) and fp32 gradients of each part, bound from the one tensor list
// (stage_tensors.h).
using NormWeights = NormTensors<const void*>;
using NormGrads = NormTensors<float*>;
using MoeWeights = MoeTensors<const void*>;
using MoeGrads = MoeTensors<float*>;
using LayerWeights = LayerTensors<const void*>;
using LayerGrads = LayerTensors<float*>;
using EmbeddingWeights = EmbeddingTensors<const void*>;
using EmbeddingGrads = EmbeddingTensors<float*>;
using HeadWeights = HeadTensors<const void*>;
using HeadGrads = HeadTensors<float*>;

// Dropout stream offsets: every (global layer, site) gets its own 2^40-element range of the
// micro-batch's stream; hidden-dropout offsets count global rows, so sequence parallel draws the
// same masks as one process.
enum class DropoutSite : uint64_t { AttentionProbs = 0, AttentionOut = 1, MlpOut = 2, Embedding = 3 };
uint64_t dropout_offset(const LayerContext& ctx, int global_layer, DropoutSite site);
// The layer's query heads this rank holds (a contiguous share under TP): attention dropout indexes its
// masks by the layer's head, so every TP size drops what one process drops.
HeadSlice attention_heads(const LayerContext& ctx);

// res[0] (N_seq, C) = dropout(wte[tokens] + wpe[positions]).
void embedding_forward(const LayerContext& ctx, const EmbeddingWeights& w, StageActivations& a, bool train);
// Reads dres (N_seq, C) = dL/dres[0]; accumulates into the embedding gradients.
void embedding_backward(const LayerContext& ctx, const EmbeddingGrads& g, StageActivations& a);

// How a layer meets the norms next to it when its last residual add is fused with the norm that reads
// the layer output (StageRun::fused_ops): the stage passes the next norm of this stage.
struct NormFusion {
  bool input_normed = false;               // layers[li].ln1 already holds norm(x): the previous layer wrote it
  const NormWeights* next_norm = nullptr;  // the norm of this layer's output inside the stage (the next
                                           // layer's ln1 or the final norm); null: the output leaves the stage
};

// out (N_seq, C) = transformer layer `li` (local index; global layer_first + li) applied to x = res[li].
// With fusion.next_norm, also writes that norm of out into layers[li + 1].ln1 (or lnf after the last layer).
void layer_forward(const LayerContext& ctx, const LayerWeights& w, StageActivations& a, int li, bool train,
                   const NormFusion& fusion = {});
// The parts of layer_forward that selective recomputation replays before layer_backward (recompute.h),
// each writing exactly what layer_forward writes there (the same ops, so the same bits):
// attention output and softmax statistics of layer li from its qkv (same dropout masks):
void attention_core_forward(const LayerContext& ctx, StageActivations& a, int li, bool train);
// fc1 output and the activation from the MLP input ln2_full:
void mlp_activation_forward(const LayerContext& ctx, const LayerWeights& w, StageActivations& a, int li);
// The dense MLP's backward: dmlp_in (N, C) = dL/d(ln2_full) (=) from dy (N, C) = dL/d(fc2 output);
// accumulates the fc1/fc2 gradients.
void dense_mlp_backward(const LayerContext& ctx, const LayerWeights& w, const LayerGrads& g, StageActivations& a,
                        int li, const void* dy, void* dmlp_in);
// the input norm and the pre-MLP norm from res[li] and res_mid (a fused residual add + norm gives the
// same values as the norm alone, StageRun::fused_ops):
void layer_norms_forward(const LayerContext& ctx, const LayerWeights& w, StageActivations& a, int li);
// their copies gathered over the sequence-parallel ranks (the qkv and fc1 inputs):
void layer_norm_gathers_forward(const LayerContext& ctx, StageActivations& a, int li);

// The MoE MLP of layer li (moe_layer.cpp): out (N, C) = routed experts (+ shared expert) of ln2_full.
// Also records the layer's routing statistics and losses in a.moe[li].
void moe_mlp_forward(const LayerContext& ctx, const MoeWeights& w, StageActivations& a, int li, void* out);
// The experts' activation from their fc1 output (what --recompute-modules moe_act replays).
void moe_activation_forward(const LayerContext& ctx, StageActivations& a, int li);
// dinp (N, C) = dL/d(ln2_full) (=) from dy (N, C) = dL/d(MoE output), the router's auxiliary losses
// included (weighted a.moe_loss_weight); accumulates the MoE weight gradients.
void moe_mlp_backward(const LayerContext& ctx, const MoeWeights& w, const MoeGrads& g, StageActivations& a, int li,
                      const void* dy, void* dinp);

// dres (N_seq, C) holds dL/d(layer output) on entry and dL/d(layer input) on exit.
void layer_backward(const LayerContext& ctx, const LayerWeights& w, const LayerGrads& g, StageActivations& a, int li);

// Final norm, output layer, cross-entropy: losses (N) from res[L] and the targets. input_normed: lnf
// already holds the final norm (the last layer's fused residual add wrote it).
void head_forward(const LayerContext& ctx, const HeadWeights& w, StageActivations& a, bool input_normed = false);
// dloss (N) holds mask * loss weight; leaves dres (N_seq, C) = dL/dres[L].
void head_backward(const LayerContext& ctx, const HeadWeights& w, const HeadGrads& g, StageActivations& a);

}  // namespace gptrain
