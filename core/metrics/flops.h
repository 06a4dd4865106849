// Model FLOPs of a dense GPT per training iteration, for "throughput per GPU (TFLOP/s/GPU)" and MFU.
//
// Formula: Megatron-LM's num_floating_point_operations (megatron/training/training.py,
// transformer_flops(), dense MHA/GQA path), i.e. per token, forward + backward (3 GEMMs) x 2 FLOPs/FMA:
//     6 · [ L · ( h·(q + 2k)            QKV projection (k = kv_channels · query_groups: GQA)
//               + q·h                   attention output projection
//               + c·q·s                 core attention QK^T and (QK^T)V; c = 1 causal, 2 full
//               + h·f·(3 if SwiGLU else 2) )   MLP (SwiGLU: fc1 is h -> 2f)
//           + h·V ]                     logits (padded vocab; the same whether or not the output
//                                       layer is tied to the embedding; the embedding lookup is free)
// times B·s tokens, B = global batch size, s = seq length, q = kv_channels · heads.
// AttentionFlops::causal (the default) is Megatron's current convention, which counts only the
// unmasked half of the causal score matrix (docs/performance-model.md §1); AttentionFlops::full is
// the PaLM Appendix B / nanoGPT / torchtitan / Megatron ≤ 2025 convention 6N + 12·L·h·s
// (docs/performance-model.md §2). Recomputation is never counted (model FLOPs, not hardware FLOPs).
#pragma once

#include "core/model/model_config.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gptrain::metrics {

enum class AttentionFlops { causal, full };

// Name of the convention, for printing next to every MFU ("Megatron causal 6N+6Lqs", ...).
std::string_view attention_flops_name(AttentionFlops a);

// Model FLOPs per token (forward + backward).
// Reads the global sizes of a model configuration (padded vocabulary, kv_channels and query groups filled).
double flops_per_token(const ModelConfig& m, AttentionFlops a = AttentionFlops::causal);

// Model FLOPs of one iteration over `global_batch_size` sequences of m.seq_length tokens.
double flops_per_iteration(const ModelConfig& m, int64_t global_batch_size, AttentionFlops a = AttentionFlops::causal);

// Megatron's log value: flops / (seconds · 1e12 · world_size).
double tflops_per_gpu(double flops_per_iter, double seconds_per_iter, int world_size);

// Model FLOPs utilisation: flops / (seconds · world_size · peak_flops_per_gpu).
double mfu(double flops_per_iter, double seconds_per_iter, int world_size, double peak_flops_per_gpu);

// Dense BF16/FP16 tensor-core peak FLOP/s for a CUDA device name (cudaDeviceProp::name), without
// sparsity: H100 SXM and H200 989e12, H100 NVL 835e12, H100 PCIe 756e12, A100 312e12. nullopt when
// the device is not in the table (then print no MFU rather than a wrong one).
std::optional<double> peak_bf16_flops(std::string_view device_name);

}  // namespace gptrain::metrics
