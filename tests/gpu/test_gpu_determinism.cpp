// Determinism of the CUDA backend: the backward ops that reduce over rows (embedding, norms, bias
// and weight gradients, attention) run twice on the same inputs and must give the same bits, in
// deterministic mode and (for our own kernels, which use no atomics at all) also without it.
#include "tests/gpu/gpu_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

namespace {

// Runs a chain of backward ops on fixed inputs and returns the bytes of every gradient.
std::vector<unsigned char> backward_bits(DType t, bool deterministic) {
  auto gb = make_backend("cuda", t, BackendOptions{AttentionBackend::Flash, deterministic});
  Backend& g = *gb;
  const int B = 2, T = 96, NH = 4, NKV = 2, HS = 64, C = NH * HS, V = 500, N = B * T;
  const std::size_t es = dtype_size(t), nqkv = std::size_t(N) * (NH + 2 * NKV) * HS;
  std::vector<int32_t> tokens(N), positions(N);
  for (int i = 0; i < N; ++i) tokens[i] = (i * 7) % 50, positions[i] = i % T;  // heavy token repetition
  Buf tok = upload_i32(g, tokens), pos = upload_i32(g, positions);
  Buf x = upload(g, t, randn(std::size_t(N) * C, 81)), dy = upload(g, t, randn(std::size_t(N) * C, 82));
  Buf w = upload(g, t, randn(C, 83)), qkv = upload(g, t, randn(nqkv, 84)),
      W = upload(g, t, randn(std::size_t(C) * C, 85, 0.05f));
  Buf mean(g, N * 4), rstd(g, N * 4), y(g, std::size_t(N) * C * es), out(g, std::size_t(N) * C * es),
      lse(g, std::size_t(N) * NH * 4);
  Buf dwte(g, std::size_t(V) * C * 4), dwpe(g, std::size_t(T) * C * 4), dlnw(g, C * 4), dlnb(g, C * 4);
  Buf dx(g, std::size_t(N) * C * es), dW(g, std::size_t(C) * C * 4), db(g, C * 4), dqkv(g, nqkv * es);
  for (Buf* b : {&dwte, &dwpe, &dlnw, &dlnb, &dx, &dW, &db}) g.fill_zero(b->get(), b->bytes());
  g.embedding_backward(dwte.f(), dwpe.f(), dy.get(), tok.i(), pos.i(), N, C, 0, V);
  g.layernorm_forward(y.get(), mean.f(), rstd.f(), x.get(), w.get(), nullptr, N, C, 1e-5f);
  g.layernorm_backward(dx.get(), dlnw.f(), dlnb.f(), dy.get(), x.get(), w.get(), mean.f(), rstd.f(), N, C);
  g.matmul_backward(dx.get(), dW.f(), db.f(), dy.get(), x.get(), W.get(), N, C, C, true);
  g.attention_forward(out.get(), lse.f(), qkv.get(), nullptr, B, T, NH, NKV, HS, 0.1f, 5, 0);
  g.attention_backward(dqkv.get(), dy.get(), qkv.get(), out.get(), lse.f(), nullptr, B, T, NH, NKV, HS, 0.1f, 5, 0);
  std::vector<unsigned char> all;
  for (Buf* b : {&dwte, &dwpe, &dlnw, &dlnb, &dx, &dW, &db, &dqkv}) {
    std::vector<unsigned char> part = bytes_of(g, *b, b->bytes());
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

}  // namespace

TEST_CASE("gpu determinism: backward ops give the same bits run to run", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16}) {
    for (bool det : {true, false}) {
      INFO("dtype " << dtype_name(t) << " deterministic " << det);
      const std::vector<unsigned char> a = backward_bits(t, det), b = backward_bits(t, det);
      REQUIRE(a.size() == b.size());
      CHECK(std::memcmp(a.data(), b.data(), a.size()) == 0);
    }
  }
}

TEST_CASE("gpu startup check describes the device", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  const CudaDeviceInfo info = check_cuda_device(0);
  CHECK(info.cc_major >= 8);
  CHECK(info.sm_count > 0);
  CHECK(info.cudnn_version >= 90000);
  CHECK(info.nccl_version > 0);
  CHECK(describe(info).find("sm_") != std::string::npos);
  CHECK_THROWS_WITH(check_cuda_device(cuda_device_count()), Catch::Contains("CUDA_VISIBLE_DEVICES"));
}

TEST_CASE("gpu startup without a GPU: make_backend(\"cuda\") fails with an actionable message", "[gpu]") {
  if (cuda_device_count() > 0) {
    std::printf("GPTRAIN_SKIP: a CUDA device is present; this case checks the no-GPU message\n");
    WARN("a CUDA device is present: skipped");
    return;
  }
  CHECK_THROWS_WITH(make_backend("cuda", DType::BF16), Catch::Contains("--device cpu"));
}
