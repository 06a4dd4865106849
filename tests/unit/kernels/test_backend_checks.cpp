// The public Backend ops check their arguments once, for every backend (kernels/backend.cpp), with one
// message per check naming the op and the values; make_backend takes BackendOptions and the backend
// reports them back. Run on the CPU backend: a rejected call throws before any memory is touched, so
// null pointers suffice.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "kernels/backend.h"
#include "kernel_test_util.h"

using namespace gptrain;
using gptrain::test::cpu_backend;

TEST_CASE("backend checks: a dropout probability outside 0..1 is rejected with one message") {
  auto be = cpu_backend();
  std::vector<float> x(8, 1.0f), y(8);
  REQUIRE_THROWS_WITH(be->dropout_forward(y.data(), x.data(), 8, 1.0f, 1, 0),
                      "dropout_forward: dropout probability 1 is outside [0, 1)");
  REQUIRE_THROWS_WITH(be->dropout_backward(y.data(), x.data(), 8, -0.5f, 1, 0),
                      "dropout_backward: dropout probability -0.5 is outside [0, 1)");
  REQUIRE_THROWS_WITH(be->attention_forward(nullptr, nullptr, nullptr, nullptr, 1, 4, 2, 2, 8, 1.5f, 1, 0),
                      "attention_forward: dropout probability 1.5 is outside [0, 1)");
  be->dropout_forward(y.data(), x.data(), 8, 0.0f, 1, 0);  // p = 0 is allowed: a copy
  REQUIRE(y == x);
}

TEST_CASE("backend checks: attention heads and head size and sizes") {
  auto be = cpu_backend();
  REQUIRE_THROWS_WITH(be->attention_forward(nullptr, nullptr, nullptr, nullptr, 1, 4, 3, 2, 8, 0.0f, 1, 0),
                      "attention_forward: NH=3 query heads are not a multiple of NKV=2 KV heads");
  REQUIRE_THROWS_WITH(
      be->attention_backward(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 1, 4, 4, 0, 8, 0.0f, 1, 0),
      "attention_backward: NH=4 query heads are not a multiple of NKV=0 KV heads");
  REQUIRE_THROWS_WITH(be->attention_forward(nullptr, nullptr, nullptr, nullptr, 1, 4, 4, 2, 0, 0.0f, 1, 0),
                      "attention_forward: head size HS=0 must be positive");
  REQUIRE_THROWS_WITH(be->attention_forward(nullptr, nullptr, nullptr, nullptr, 1, -4, 4, 2, 8, 0.0f, 1, 0),
                      "attention_forward: T=-4 must not be negative");
}

TEST_CASE("backend checks: rope rotary_dim and base") {
  auto be = cpu_backend();
  REQUIRE_THROWS_WITH(be->rope(nullptr, nullptr, 2, 2, 2, 8, 3, 10000.0f, false, false),
                      "rope: rotary_dim=3 must be even, positive and at most the head size HS=8");
  REQUIRE_THROWS_WITH(be->rope(nullptr, nullptr, 2, 2, 2, 8, 10, 10000.0f, false, false),
                      "rope: rotary_dim=10 must be even, positive and at most the head size HS=8");
  REQUIRE_THROWS_WITH(be->rope(nullptr, nullptr, 2, 2, 2, 8, 8, 0.0f, true, false),
                      "rope: rotary base 0 must be positive");
}

TEST_CASE("backend checks: adamw step and xent columns and sizes and aliasing") {
  auto be = cpu_backend();
  float w = 1.0f, g = 0.5f, m = 0.0f, v = 0.0f;
  REQUIRE_THROWS_WITH(be->adamw_update(&w, nullptr, &g, &m, &v, 1, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.0f, 0, 1.0f),
                      "adamw_update: step 0 must be >= 1 (bias correction)");
  REQUIRE(w == 1.0f);  // rejected before anything ran
  be->adamw_update(&w, nullptr, &g, &m, &v, 1, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.0f, 1, 1.0f);
  REQUIRE(w < 1.0f);

  XentStats st{nullptr, nullptr, nullptr};
  REQUIRE_THROWS_WITH(be->xent_stats(st, nullptr, nullptr, 2, 8, 9, 0),
                      "xent_stats: V_valid_local=9 valid columns is outside [0, V_local=8] (the columns of the shard)");
  REQUIRE_THROWS_WITH(
      be->xent_backward(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 2, 8, -1, 0),
      "xent_backward: V_valid_local=-1 valid columns is outside [0, V_local=8] (the columns of the shard)");

  REQUIRE_THROWS_WITH(be->matmul_forward(nullptr, nullptr, nullptr, nullptr, -1, 4, 4),
                      "matmul_forward: N=-1 must not be negative");
  std::vector<float> buf(16);
  REQUIRE_THROWS_WITH(be->matmul_forward(buf.data(), buf.data(), nullptr, nullptr, 2, 2, 2),
                      "matmul_forward: out must not alias inp or weight");
  REQUIRE_THROWS_WITH(be->matmul_dgelu_backward(buf.data(), nullptr, nullptr, buf.data(), nullptr, nullptr, nullptr, 2,
                                                2, 2, GeluKind::Tanh),
                      "matmul_dgelu_backward: dpre must not alias dout, inp or pre_gelu");
  std::vector<float> a(16), b(16), wt(4);
  REQUIRE_THROWS_WITH(
      be->residual_rmsnorm_forward(a.data(), a.data(), nullptr, a.data(), b.data(), wt.data(), 4, 4, 1e-5f),
      "residual_rmsnorm_forward: norm_out must not alias residual_out, a or b");
}

TEST_CASE("make_backend: the cpu backend refuses an attention backend other than auto") {
  BackendOptions o;
  o.attention = AttentionBackend::Flash;
  REQUIRE_THROWS_WITH(make_backend("cpu", DType::F32, o),
                      "--attention-backend flash: the cpu backend has one attention implementation; use "
                      "--attention-backend auto (or --device cuda)");
  o.attention = AttentionBackend::Cudnn;
  REQUIRE_THROWS_WITH(make_backend("cpu", DType::F32, o),
                      Catch::Contains("--attention-backend cudnn: the cpu backend"));
  // fp32 only comes first, as before
  REQUIRE_THROWS_WITH(make_backend("cpu", DType::BF16, o), Catch::Contains("fp32 only"));
}

TEST_CASE("make_backend: BackendOptions reach the backend") {
  const BackendOptions defaults = cpu_backend()->options();
  REQUIRE(defaults.attention == AttentionBackend::Auto);
  REQUIRE_FALSE(defaults.deterministic);
  REQUIRE(defaults.device == 0);

  auto be = make_backend("cpu", DType::F32, BackendOptions{AttentionBackend::Auto, true, 3});
  REQUIRE(be->options().attention == AttentionBackend::Auto);
  REQUIRE(be->options().deterministic);
  REQUIRE(be->options().device == 3);
  REQUIRE_FALSE(be->device_memory().has_value());  // host memory: nothing to query
  const BackendScratch s = be->scratch_bytes();
  REQUIRE(s.gemm + s.scratch + s.attention + s.attention_plan_max == 0);
  REQUIRE(cuda_device_count() >= 0);
#ifndef GPTRAIN_HAVE_CUDA
  REQUIRE(cuda_device_count() == 0);
#endif
}
