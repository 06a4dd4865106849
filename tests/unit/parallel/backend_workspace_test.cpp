// The backend workspace estimate (parallel/plan/backend_workspace.h) against figures worked out by hand
// from the CUDA sources' sizing rules, for GPT-2 124M (12 layers, C 768, 12 heads of 64, ffn 3072,
// vocab 50257 padded to 50304) at micro-batch 8, sequence 1024, bf16; and 0 on the CPU backend. Then,
// for stages where each op in turn makes the largest request, the estimate against the kernels' own
// request functions (kernels/<op>/<op>.h, *_scratch_bytes), which the CUDA launchers call too.
#include "parallel/plan/backend_workspace.h"
#include "parallel/plan/memory_plan.h"

#include "kernels/attention/attention.h"
#include "kernels/attention/attention_cudnn_shape.h"
#include "kernels/cuda/workspace_size.h"
#include "kernels/elementwise/elementwise.h"
#include "kernels/embedding/embedding.h"
#include "kernels/layernorm/layernorm.h"
#include "kernels/matmul/matmul.h"
#include "kernels/moe/moe.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <initializer_list>
#include <string>

using namespace gptrain;
using namespace gptrain::parallel;

namespace {

StageConfig gpt2_124m(float attention_dropout) {
  StageConfig c;
  c.num_layers = 12, c.hidden_size = 768, c.num_attention_heads = 12, c.seq_length = 1024;
  c.max_position_embeddings = 1024, c.micro_batch_size = 8, c.vocab_size = 50257;
  c.attention_dropout = attention_dropout;
  c.finalize(128);
  return c;
}

WorkspaceOptions on_cuda(AttentionBackend a, bool deterministic) {
  WorkspaceOptions o;
  o.backend = "cuda";
  o.cuda = BackendOptions{a, deterministic};
  return o;
}

// Hand-computed, N = B*T = 8192 rows, 64 tiles of 128 rows, rows of attention B*T*NH = 98304:
//   embedding backward: 4 x 32768 (int32 keys/values) + round256(cub bound 8*8192 + 4*(8192+255) + 1 MiB
//                       = 1147900) = 131072 + 1147904 = 1278976   <- the largest request
//   layernorm backward: 2 x 64*768*4 = 393216; bias grad (fc1, 3072 wide): 64*3072*4 = 786432;
//   attention D: 98304*4 = 393216; sum_squares: ~15 KiB
//   Workspace capacity: 1278976 + 1278976/4 = 1598720
//   cuDNN, non-deterministic: 393216 (softmax_sum) + 98304*64*4 (dQ accumulator) = 25559040, grown
//   to 25559040 + 6389760 = 31948800; deterministic: 393216 + 98304 = 491520
constexpr std::size_t kGemm = 33554432, kScratch = 1598720, kCudnn = 31948800, kCudnnDet = 491520;

}  // namespace

TEST_CASE("backend workspace: GPT-2 124M, cuda bf16, by attention backend and determinism") {
  const StageConfig c = gpt2_124m(0.0f);
  const std::size_t n = 124475904;  // its parameter count (sum_squares partials)
  for (bool det : {false, true}) {
    for (AttentionBackend a : {AttentionBackend::Auto, AttentionBackend::Cudnn}) {
      const BackendWorkspace w = backend_workspace(c, DType::BF16, on_cuda(a, det), n);
      CHECK(w.gemm == kGemm);
      CHECK(w.scratch == kScratch);
      CHECK(w.attention == (det ? kCudnnDet : kCudnn));
      CHECK(w.plan_workspace_unknown);
      CHECK(w.total() == kGemm + kScratch + (det ? kCudnnDet : kCudnn));
    }
    for (AttentionBackend a : {AttentionBackend::Flash, AttentionBackend::FlashFma}) {
      const BackendWorkspace w = backend_workspace(c, DType::BF16, on_cuda(a, det), n);
      CHECK(w.total() == kGemm + kScratch);  // no cuDNN: no attention Workspace, nothing unknown
      CHECK_FALSE(w.plan_workspace_unknown);
    }
  }
  // Shapes cuDNN attention cannot run (fp32, attention dropout) leave only the flash kernels' scratch.
  CHECK(backend_workspace(c, DType::F32, on_cuda(AttentionBackend::Auto, false), n).attention == 0);
  CHECK(backend_workspace(gpt2_124m(0.1f), DType::BF16, on_cuda(AttentionBackend::Auto, false), n).attention == 0);
  // The workspace grows with the micro-batch (the embedding sort and the dQ accumulator scale with B*T).
  StageConfig big = c;
  big.micro_batch_size = 16;
  big.finalize(128);
  CHECK(backend_workspace(big, DType::BF16, on_cuda(AttentionBackend::Auto, false), n).total() >
        kGemm + kScratch + kCudnn);
}

TEST_CASE("backend workspace: the CPU backend holds none, the plans count and print it") {
  const StageConfig c = gpt2_124m(0.0f);
  const BackendWorkspace cpu = backend_workspace(c, DType::F32, WorkspaceOptions{}, 124475904);
  CHECK(cpu.total() == 0);
  CHECK_FALSE(cpu.plan_workspace_unknown);
  CHECK(describe_workspace(cpu) == "none");

  const MemoryPlan on_cpu = memory_plan(c, 128, ParallelArgs{}, 0, 1, 1, DType::BF16, WorkspaceOptions{});
  const MemoryPlan on_gpu =
      memory_plan(c, 128, ParallelArgs{}, 0, 1, 1, DType::BF16, on_cuda(AttentionBackend::Auto, false));
  CHECK(on_gpu.backend.total() == kGemm + kScratch + kCudnn);
  CHECK(on_gpu.total() == on_cpu.total() + kGemm + kScratch + kCudnn);
  const std::string line = format_memory_plan(on_gpu);
  CHECK(line.find("workspace >= 63.99 MiB (backend: 32.00 MiB cuBLASLt + 1.52 MiB reductions + 30.47 MiB cuDNN "
                  "attention + cuDNN plan workspace, known only at run time)") != std::string::npos);
  CHECK(format_memory_plan(on_cpu).find("workspace 0.00 MiB,") != std::string::npos);
}

namespace {

// A stage of a model with C hidden, NH heads, micro-batch 8 x sequence 1024 (N = 8192 rows): the first and
// last stage when `ends`, else layers [2, 4) of 6 without embedding or head.
StageConfig stage(int C, int NH, bool biases, bool ends) {
  StageConfig c;
  c.num_layers = 6, c.hidden_size = C, c.num_attention_heads = NH, c.seq_length = 1024;
  c.micro_batch_size = 8, c.vocab_size = 1000, c.attention_dropout = 0.0f;
  c.add_bias_linear = biases;
  if (!ends) c.layer_first = 2, c.layer_last = 4, c.has_embedding = false, c.has_head = false;
  c.finalize(128);
  return c;
}

// What the estimate must be: the Workspace grown to the largest of `requests`, which must be `largest`
// (so that each case below really tests the op it names).
std::size_t grown_largest(std::initializer_list<std::size_t> requests, std::size_t largest) {
  const std::size_t r = std::max(requests);
  CHECK(r == largest);
  return cuda::workspace_grown_capacity(r);
}

}  // namespace

TEST_CASE("backend workspace: the estimate is the kernels' own requests, whichever op is largest") {
  using namespace gptrain::cuda;
  const std::size_t N = 8192, small_grads = 1000000;
  const WorkspaceOptions o = on_cuda(AttentionBackend::Flash, false);
  auto scratch = [&](const StageConfig& c, std::size_t grads) {
    return backend_workspace(c, DType::BF16, o, grads).scratch;
  };
  {
    INFO("first and last stage, GPT-2 shape: the embedding's sort");
    const StageConfig c = stage(768, 12, true, true);
    const std::size_t emb = embedding_backward_scratch_bytes(N, embedding_sort_temp_bytes_bound(N));
    CHECK(scratch(c, small_grads) ==
          grown_largest({emb, norm_backward_scratch_bytes(N, 768), bias_grad_scratch_bytes(N, 3072),
                         flash_attention_backward_scratch_bytes(8, 1024, 12), sum_squares_scratch_bytes(small_grads)},
                        emb));
  }
  {
    INFO("middle stage with biases: fc1's bias gradient (3072 wide)");
    const StageConfig c = stage(768, 12, true, false);
    const std::size_t bias = bias_grad_scratch_bytes(N, 3072);
    CHECK(scratch(c, small_grads) ==
          grown_largest({norm_backward_scratch_bytes(N, 768), bias, flash_attention_backward_scratch_bytes(8, 1024, 12),
                         sum_squares_scratch_bytes(small_grads)},
                        bias));
  }
  {
    INFO("middle stage without biases, C 2048: the norm backward's partials");
    const StageConfig c = stage(2048, 16, false, false);
    const std::size_t norm = norm_backward_scratch_bytes(N, 2048);
    CHECK(scratch(c, small_grads) == grown_largest({norm, flash_attention_backward_scratch_bytes(8, 1024, 16),
                                                    sum_squares_scratch_bytes(small_grads)},
                                                   norm));
  }
  {
    INFO("middle stage without biases, 32 heads of 32: the flash backward's row sums");
    const StageConfig c = stage(1024, 32, false, false);
    const std::size_t d = flash_attention_backward_scratch_bytes(8, 1024, 32);
    CHECK(scratch(c, small_grads) ==
          grown_largest({norm_backward_scratch_bytes(N, 1024), d, sum_squares_scratch_bytes(small_grads)}, d));
    const std::size_t many_grads = std::size_t(1) << 36;
    const std::size_t sq = sum_squares_scratch_bytes(many_grads);
    CHECK(scratch(c, many_grads) == grown_largest({norm_backward_scratch_bytes(N, 1024), d, sq}, sq));
  }
  {
    INFO("MoE middle stage, C 64 in one head, z-loss and load balancing: the z-loss rows");
    StageConfig c = stage(64, 1, false, false);
    c.moe.num_experts = 8, c.moe.topk = 2, c.moe.aux_loss_coeff = 0.01f, c.moe.z_loss_coeff = 0.001f;
    c.moe.layer_pattern.assign(6, 1);
    c.moe.balance = MoeBalance::SeqAuxLoss;
    c.finalize(128);
    const std::size_t z = moe_z_loss_scratch_bytes(N);
    CHECK(scratch(c, small_grads) ==
          grown_largest({norm_backward_scratch_bytes(N, 64), flash_attention_backward_scratch_bytes(8, 1024, 1),
                         sum_squares_scratch_bytes(small_grads), moe_load_balancing_loss_scratch_bytes(8, 8),
                         moe_load_balancing_loss_backward_scratch_bytes(8, 8), z},
                        z));
  }
  {
    INFO("MoE middle stage, C 32 in one head, Sinkhorn routing: Sinkhorn's row and column scales");
    StageConfig c = stage(32, 1, false, false);
    c.moe.num_experts = 8, c.moe.topk = 1, c.moe.balance = MoeBalance::Sinkhorn;
    c.moe.layer_pattern.assign(6, 1);
    c.finalize(128);
    const std::size_t sk = moe_sinkhorn_router_scratch_bytes(N, 8, true);
    CHECK(scratch(c, small_grads) ==
          grown_largest({norm_backward_scratch_bytes(N, 32), flash_attention_backward_scratch_bytes(8, 1024, 1),
                         sum_squares_scratch_bytes(small_grads), sk},
                        sk));
  }
}

TEST_CASE("backend workspace: cuDNN attention's figure is its backward request, where its shape rule admits it") {
  using namespace gptrain::cuda;
  const StageConfig c = stage(768, 12, true, true);  // 12 heads of 64
  for (bool det : {false, true}) {
    const BackendWorkspace w = backend_workspace(c, DType::BF16, on_cuda(AttentionBackend::Auto, det), 1000000);
    CHECK(w.attention == workspace_grown_capacity(cudnn_attention_backward_scratch_bytes(
                             8, 1024, 12, 64, 0, cudnn_attention_backward_accumulates_dq(det))));
  }
  // Where the rule says no (fp32, a head size cuDNN does not take), there is no cuDNN figure.
  REQUIRE_FALSE(cudnn_attention_shape_supported(DType::F32, 1024, 12, 12, 64, false, 0.0f, nullptr));
  CHECK(backend_workspace(c, DType::F32, on_cuda(AttentionBackend::Auto, false), 1000000).attention == 0);
  const StageConfig wide_heads = stage(768, 4, true, true);  // heads of 192
  REQUIRE_FALSE(cudnn_attention_shape_supported(DType::BF16, 1024, 4, 4, 192, false, 0.0f, nullptr));
  CHECK(backend_workspace(wide_heads, DType::BF16, on_cuda(AttentionBackend::Auto, false), 1000000).attention == 0);
}
