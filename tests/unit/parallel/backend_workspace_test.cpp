// The backend workspace estimate (parallel/plan/backend_workspace.h) against figures worked out by hand
// from the CUDA sources' sizing rules, for GPT-2 124M (12 layers, C 768, 12 heads of 64, ffn 3072,
// vocab 50257 padded to 50304) at micro-batch 8, sequence 1024, bf16; and 0 on the CPU backend.
#include "parallel/plan/backend_workspace.h"
#include "parallel/plan/memory_plan.h"

#include <catch2/catch.hpp>

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

WorkspaceOptions cuda(AttentionBackend a, bool deterministic) {
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
      const BackendWorkspace w = backend_workspace(c, DType::BF16, cuda(a, det), n);
      CHECK(w.gemm == kGemm);
      CHECK(w.scratch == kScratch);
      CHECK(w.attention == (det ? kCudnnDet : kCudnn));
      CHECK(w.plan_workspace_unknown);
      CHECK(w.total() == kGemm + kScratch + (det ? kCudnnDet : kCudnn));
    }
    for (AttentionBackend a : {AttentionBackend::Flash, AttentionBackend::FlashFma}) {
      const BackendWorkspace w = backend_workspace(c, DType::BF16, cuda(a, det), n);
      CHECK(w.total() == kGemm + kScratch);  // no cuDNN: no attention Workspace, nothing unknown
      CHECK_FALSE(w.plan_workspace_unknown);
    }
  }
  // Shapes cuDNN attention cannot run (fp32, attention dropout) leave only the flash kernels' scratch.
  CHECK(backend_workspace(c, DType::F32, cuda(AttentionBackend::Auto, false), n).attention == 0);
  CHECK(backend_workspace(gpt2_124m(0.1f), DType::BF16, cuda(AttentionBackend::Auto, false), n).attention == 0);
  // The workspace grows with the micro-batch (the embedding sort and the dQ accumulator scale with B*T).
  StageConfig big = c;
  big.micro_batch_size = 16;
  big.finalize(128);
  CHECK(backend_workspace(big, DType::BF16, cuda(AttentionBackend::Auto, false), n).total() >
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
      memory_plan(c, 128, ParallelArgs{}, 0, 1, 1, DType::BF16, cuda(AttentionBackend::Auto, false));
  CHECK(on_gpu.backend.total() == kGemm + kScratch + kCudnn);
  CHECK(on_gpu.total() == on_cpu.total() + kGemm + kScratch + kCudnn);
  const std::string line = format_memory_plan(on_gpu);
  CHECK(line.find("workspace >= 63.99 MiB (backend: 32.00 MiB cuBLASLt + 1.52 MiB reductions + 30.47 MiB cuDNN "
                  "attention + cuDNN plan workspace, known only at run time)") != std::string::npos);
  CHECK(format_memory_plan(on_cpu).find("workspace 0.00 MiB,") != std::string::npos);
}
