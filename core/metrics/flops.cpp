// Megatron's num_floating_point_operations for a GPT, dense or with MoE layers (see flops.h for the formula).
#include "core/metrics/flops.h"

#include "core/common/error.h"

namespace gptrain::metrics {

std::string_view attention_flops_name(AttentionFlops a) {
  return a == AttentionFlops::causal ? "Megatron num_floating_point_operations, causal attention (6N + 6·L·q·s)"
                                     : "PaLM/Megatron<=2025, full attention (6N + 12·L·q·s)";
}

double flops_per_token(const ModelConfig& m, AttentionFlops a) {
  check(m.num_layers > 0 && m.hidden_size > 0 && m.num_attention_heads > 0 && m.num_query_groups > 0 &&
            m.kv_channels > 0 && m.ffn_hidden_size > 0 && m.seq_length > 0 && m.padded_vocab_size > 0,
        "flops_per_token: every model dimension must be > 0 (layers {}, hidden {}, heads {}, groups {}, "
        "kv_channels {}, ffn {}, seq {}, vocab {})",
        m.num_layers, m.hidden_size, m.num_attention_heads, m.num_query_groups, m.kv_channels, m.ffn_hidden_size,
        m.seq_length, m.padded_vocab_size);
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.kv_channels * m.num_attention_heads);  // query projection width
  const double k = static_cast<double>(m.kv_channels * m.num_query_groups);     // key (= value) width
  const double s = static_cast<double>(m.seq_length);
  const double f = static_cast<double>(m.ffn_hidden_size);
  const double v = static_cast<double>(m.padded_vocab_size);
  const double core_attention = (a == AttentionFlops::causal ? 1.0 : 2.0) * q * s;
  const double per_layer = h * (q + 2 * k) + q * h + core_attention;
  // MLPs: an MoE layer's token goes through K experts of width FE and the shared expert (Megatron counts
  // moe_ffn_hidden_size * topk + the shared expert's width; the router is not counted).
  const int moe_layers = m.moe.num_moe_layers();
  const double moe_f = static_cast<double>(m.moe.ffn_hidden_size) * m.moe.topk + m.moe.shared_expert_intermediate_size;
  const double mlp_width = f * static_cast<double>(m.num_layers - moe_layers) + moe_f * moe_layers;
  return 6.0 * (static_cast<double>(m.num_layers) * per_layer + h * mlp_width * (m.gated_mlp() ? 3.0 : 2.0) + h * v);
}

double flops_per_iteration(const ModelConfig& m, int64_t global_batch_size, AttentionFlops a) {
  check(global_batch_size > 0, "flops_per_iteration: global batch size must be > 0, got {}", global_batch_size);
  return flops_per_token(m, a) * static_cast<double>(global_batch_size) * static_cast<double>(m.seq_length);
}

double tflops_per_gpu(double flops_per_iter, double seconds_per_iter, int world_size) {
  check(seconds_per_iter > 0 && world_size > 0, "tflops_per_gpu: time ({}) and world size ({}) must be > 0",
        seconds_per_iter, world_size);
  return flops_per_iter / (seconds_per_iter * 1e12 * world_size);
}

double mfu(double flops_per_iter, double seconds_per_iter, int world_size, double peak_flops_per_gpu) {
  check(seconds_per_iter > 0 && world_size > 0 && peak_flops_per_gpu > 0,
        "mfu: time ({}), world size ({}) and peak ({}) must be > 0", seconds_per_iter, world_size, peak_flops_per_gpu);
  return flops_per_iter / (seconds_per_iter * world_size * peak_flops_per_gpu);
}

std::optional<double> peak_bf16_flops(std::string_view name) {
  auto has = [&](std::string_view needle) { return name.find(needle) != std::string_view::npos; };
  if (has("H200")) return 989e12;
  if (has("H100")) {
    if (has("NVL")) return 835e12;
    if (has("PCIe")) return 756e12;
    return 989e12;  // SXM ("NVIDIA H100 80GB HBM3")
  }
  if (has("A100")) return 312e12;
  return std::nullopt;
}

}  // namespace gptrain::metrics
