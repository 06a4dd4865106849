// FLOPs counter: hand-computed per-token counts (see the sums in the comments) for GPT-2 124M and a
// small GQA + SwiGLU model, both attention conventions, and the throughput / MFU arithmetic.
#include "core/common/error.h"
#include "core/metrics/flops.h"

#include <catch2/catch.hpp>

using namespace gptrain::metrics;

namespace {

gptrain::StageConfig gpt2_124m() {
  gptrain::StageConfig m;
  m.num_layers = 12;
  m.hidden_size = 768;
  m.num_attention_heads = 12;
  m.num_query_groups = 12;
  m.kv_channels = 64;
  m.ffn_hidden_size = 3072;
  m.seq_length = 1024;
  m.padded_vocab_size = 50304;
  return m;
}

}  // namespace

TEST_CASE("flops: GPT-2 124M per token, causal and full attention", "[flops]") {
  // Per layer: qkv 768·2304 = 1,769,472; proj 768·768 = 589,824; mlp 2·768·3072 = 4,718,592;
  // core attention 768·1024 = 786,432 (causal) or 1,572,864 (full).
  // Causal: 12·7,864,320 + 768·50304 (38,633,472) = 133,005,312; ×6 = 798,031,872.
  CHECK(flops_per_token(gpt2_124m()) == 798031872.0);
  // Full: 12·8,650,752 + 38,633,472 = 142,442,496; ×6 = 854,654,976, which is PaLM's 6N + 12·L·h·s with
  // N = 12·12·768² + 768·50304 = 123,568,128 (6N = 741,408,768; 12·12·768·1024 = 113,246,208).
  CHECK(flops_per_token(gpt2_124m(), AttentionFlops::full) == 854654976.0);
  CHECK(flops_per_token(gpt2_124m(), AttentionFlops::full) == 6.0 * 123568128 + 12.0 * 12 * 768 * 1024);
  // Per iteration: global batch 8 × 1024 tokens.
  CHECK(flops_per_iteration(gpt2_124m(), 8) == 798031872.0 * 8 * 1024);
}

TEST_CASE("flops: GQA and SwiGLU", "[flops]") {
  gptrain::StageConfig m;
  m.num_layers = 2;
  m.hidden_size = 256;
  m.num_attention_heads = 8;
  m.num_query_groups = 2;  // k = v = 32·2 = 64 wide
  m.kv_channels = 32;
  m.ffn_hidden_size = 688;
  m.seq_length = 128;
  m.padded_vocab_size = 1024;
  m.swiglu = true;
  // Per layer: qkv 256·(256+128) = 98,304; proj 65,536; core 256·128 = 32,768; mlp 3·256·688 = 528,384
  // → 724,992; ×2 layers + logits 262,144 = 1,712,128; ×6 = 10,272,768.
  CHECK(flops_per_token(m) == 10272768.0);
  m.swiglu = false;  // mlp 2·256·688 = 352,256: per layer 548,864 → 1,359,872 ×6 = 8,159,232
  CHECK(flops_per_token(m) == 8159232.0);
  m.num_query_groups = 8;  // plain MHA: qkv 256·768 = 196,608 → per layer 647,168 → 1,556,480 ×6 = 9,338,880
  CHECK(flops_per_token(m) == 9338880.0);
}

TEST_CASE("flops: throughput per GPU and MFU", "[flops]") {
  const double f = flops_per_iteration(gpt2_124m(), 8);  // 6,537,477,095,424
  CHECK(tflops_per_gpu(f, 1.0, 1) == Approx(6.537477095424).epsilon(1e-15));
  CHECK(tflops_per_gpu(f, 0.5, 4) == Approx(3.268738547712).epsilon(1e-15));
  CHECK(mfu(f, 1.0, 1, 989e12) == Approx(6.537477095424e12 / 989e12).epsilon(1e-15));
  CHECK_THROWS_AS(tflops_per_gpu(f, 0.0, 1), gptrain::Error);
  gptrain::StageConfig bad = gpt2_124m();
  bad.kv_channels = 0;
  CHECK_THROWS_AS(flops_per_token(bad), gptrain::Error);
}

TEST_CASE("flops: peak table uses dense (non-sparse) BF16 numbers", "[flops]") {
  CHECK(peak_bf16_flops("NVIDIA H100 80GB HBM3") == 989e12);
  CHECK(peak_bf16_flops("NVIDIA H200") == 989e12);
  CHECK(peak_bf16_flops("NVIDIA H100 PCIe") == 756e12);
  CHECK(peak_bf16_flops("NVIDIA H100 NVL") == 835e12);
  CHECK(peak_bf16_flops("NVIDIA A100-SXM4-80GB") == 312e12);
  CHECK_FALSE(peak_bf16_flops("cpu").has_value());
}
