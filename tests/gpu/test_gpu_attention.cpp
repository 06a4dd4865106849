// GPU vs CPU twin for causal attention: the flash kernels (fp32/bf16/fp16, GQA, segment masks,
// attention dropout with the shared Philox mapping, T not a multiple of the tile, head sizes 64/128
// and an odd-sized one, sliding windows on the FMA and tensor-core kernels) and the cuDNN fused forward + backward
// (bf16/fp16, selected with --attention-backend), forward output, logsumexp and the full dqkv.
#include <random>

#include "kernels/attention/attention_cudnn.h"
#include "tests/gpu/gpu_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

namespace {

struct Case {
  int B, T, NH, NKV, HS;
  bool segments;
  float dropout;
  HeadSlice heads{};  // a TP rank's share of the layer's heads (dropout masks by the layer's head)
  int window = -1;    // sliding window (keys t - window .. t); -1 none
};

void compare_attention(DType t, AttentionBackend impl, const Case& k) {
  Twins tw(t);
  tw.cuda().set_attention_backend(impl);
  Backend& c = *tw.cpu;
  Backend& g = *tw.gpu;
  const std::size_t nqkv = std::size_t(k.B) * k.T * (k.NH + 2 * k.NKV) * k.HS;
  const std::size_t nout = std::size_t(k.B) * k.T * k.NH * k.HS, nlse = std::size_t(k.B) * k.NH * k.T;
  std::vector<float> qkv = rounded(t, randn(nqkv, 41)), dout = rounded(t, randn(nout, 42));
  std::vector<int32_t> seg(std::size_t(k.B) * k.T);
  for (int b = 0; b < k.B; ++b)
    for (int i = 0; i < k.T; ++i) seg[std::size_t(b) * k.T + i] = (i * 3) / k.T + b;  // 3 documents per row
  const uint64_t seed = 777, offset = 12;
  Buf cq = upload_f32(c, qkv), co(c, nout * 4), cl(c, nlse * 4), cdo = upload_f32(c, dout), cdq(c, nqkv * 4);
  Buf gq = upload(g, t, qkv), go(g, nout * 4), gl(g, nlse * 4), gdo = upload(g, t, dout), gdq(g, nqkv * 4);
  Buf cs = upload_i32(c, seg), gs = upload_i32(g, seg);
  const int32_t* cseg = k.segments ? cs.i() : nullptr;
  const int32_t* gseg = k.segments ? gs.i() : nullptr;
  c.attention_forward(co.get(), cl.f(), cq.get(), cseg, k.B, k.T, k.NH, k.NKV, k.HS, k.dropout, seed, offset, k.heads,
                      k.window);
  g.attention_forward(go.get(), gl.f(), gq.get(), gseg, k.B, k.T, k.NH, k.NKV, k.HS, k.dropout, seed, offset, k.heads,
                      k.window);
  INFO("dtype " << dtype_name(t) << " impl " << attention_backend_name(impl) << " B=" << k.B << " T=" << k.T
                << " NH=" << k.NH << " NKV=" << k.NKV << " HS=" << k.HS << " segments=" << k.segments
                << " dropout=" << k.dropout << " window=" << k.window << " path "
                << tw.cuda().attention_impl_for(k.T, k.NH, k.NKV, k.HS, k.segments, k.dropout));
  GPTRAIN_CHECK_CLOSE("attention out", download(g, t, go.get(), nout), download_f32(c, co, nout), tol(t));
  GPTRAIN_CHECK_CLOSE("attention lse", download_f32(g, gl, nlse), download_f32(c, cl, nlse),
                      t == DType::F32 ? 1e-5 : 1e-3);
  c.attention_backward(cdq.get(), cdo.get(), cq.get(), co.get(), cl.f(), cseg, k.B, k.T, k.NH, k.NKV, k.HS, k.dropout,
                       seed, offset, k.heads, k.window);
  g.attention_backward(gdq.get(), gdo.get(), gq.get(), go.get(), gl.f(), gseg, k.B, k.T, k.NH, k.NKV, k.HS, k.dropout,
                       seed, offset, k.heads, k.window);
  // bf16 gradients go through two roundings of P-sized sums: a little more slack than the forward.
  GPTRAIN_CHECK_CLOSE("attention dqkv", download(g, t, gdq.get(), nqkv), download_f32(c, cdq, nqkv),
                      t == DType::F32 ? 1e-5 : 2 * tol(t));
}

}  // namespace

TEST_CASE("gpu flash attention fp32 vs cpu: MHA, GQA, segments, dropout, ragged T", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  const Case cases[] = {
      {2, 64, 4, 4, 64, false, 0.0f},          // MHA, T = 2 tiles
      {2, 77, 4, 2, 64, false, 0.0f},          // GQA, T not a multiple of 32
      {1, 100, 6, 1, 32, true, 0.0f},          // MQA with document segments
      {2, 65, 4, 2, 64, false, 0.2f},          // attention dropout
      {1, 40, 2, 2, 128, true, 0.1f},          // head size 128, segments + dropout
      {2, 65, 2, 1, 64, false, 0.2f, {2, 6}},  // dropout on heads 2..3 of 6 (a TP rank's share)
      {1, 33, 2, 1, 80, false, 0.0f},          // head size 80 (not a power of two)
  };
  for (const Case& k : cases) compare_attention(DType::F32, AttentionBackend::Flash, k);
}

TEST_CASE("gpu flash attention bf16/fp16 vs cpu", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::BF16, DType::F16}) {
    compare_attention(t, AttentionBackend::Flash, {2, 96, 4, 2, 64, false, 0.0f});
    compare_attention(t, AttentionBackend::Flash, {1, 70, 4, 4, 128, true, 0.1f});
  }
}

TEST_CASE("gpu cudnn attention forward + backward via the backend, bf16/fp16 vs cpu", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::BF16, DType::F16}) {
    Twins probe(t);
    std::string why;
    if (!cuda::CudnnAttention::supports(probe.cuda().device_info(), t, 128, 4, 2, 64, false, 0.0f, &why)) {
      std::printf("GPTRAIN_SKIP: cuDNN attention unsupported here: %s\n", why.c_str());
      WARN("cuDNN attention unsupported here: " << why);
      return;
    }
    compare_attention(t, AttentionBackend::Cudnn, {2, 128, 4, 4, 64, false, 0.0f});
    compare_attention(t, AttentionBackend::Cudnn, {2, 100, 8, 2, 128, false, 0.0f});
  }
}

TEST_CASE("gpu attention auto falls back to flash where cudnn cannot run the case", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  Twins tw(DType::BF16);
  tw.cuda().set_attention_backend(AttentionBackend::Auto);
  CHECK(std::string(tw.cuda().attention_impl_for(64, 4, 4, 64, true, 0.0f)) == "flash");   // segments
  CHECK(std::string(tw.cuda().attention_impl_for(64, 4, 4, 64, false, 0.1f)) == "flash");  // dropout
  tw.cuda().set_attention_backend(AttentionBackend::Cudnn);
  CHECK_THROWS_WITH(tw.cuda().attention_impl_for(64, 4, 4, 64, true, 0.0f),
                    Catch::Contains("--attention-backend cudnn"));
  Twins f32(DType::F32);
  CHECK(std::string(f32.cuda().attention_impl_for(64, 4, 4, 64, false, 0.0f)) == "flash");
}

TEST_CASE("gpu sliding-window attention vs cpu: FMA and tensor-core kernels skip the tiles outside the window",
          "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  // Windows below one tile, across tile edges and covering T; with segments and dropout inside the window.
  const Case f32[] = {
      {2, 200, 4, 2, 64, false, 0.0f, {}, 0},
      {2, 200, 4, 2, 64, false, 0.0f, {}, 40},
      {1, 150, 2, 1, 128, true, 0.1f, {}, 70},
      {1, 100, 2, 2, 64, false, 0.0f, {}, 99},
  };
  for (const Case& k : f32) compare_attention(DType::F32, AttentionBackend::Flash, k);
  for (DType t : {DType::BF16, DType::F16}) {
    compare_attention(t, AttentionBackend::Flash, {2, 300, 4, 2, 64, false, 0.0f, {}, 70});    // tensor cores
    compare_attention(t, AttentionBackend::FlashFma, {2, 300, 4, 2, 64, true, 0.1f, {}, 70});  // FMA kernels
    compare_attention(t, AttentionBackend::Auto, {1, 256, 4, 4, 128, false, 0.0f, {}, 63});    // cuDNN skipped
  }
  Twins tw(DType::BF16);
  tw.cuda().set_attention_backend(AttentionBackend::Cudnn);
  Buf q(*tw.gpu, 64 * 12 * 64 * 2), o(*tw.gpu, 64 * 4 * 64 * 2), l(*tw.gpu, 4 * 64 * 4);
  CHECK_THROWS_WITH(tw.gpu->attention_forward(o.get(), l.f(), q.get(), nullptr, 1, 64, 4, 4, 64, 0.0f, 0, 0, {}, 8),
                    Catch::Contains("--attention-backend cudnn") && Catch::Contains("sliding window"));
}
