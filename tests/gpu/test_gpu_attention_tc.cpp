// The tensor-core flash kernels (kernels/attention/attention_tc.cu) against the CPU twin and against
// the FMA flash kernels (--attention-backend flash vs flash-fma) on the same 16-bit inputs: bf16/fp16,
// MHA/GQA/MQA, T not a multiple of the 64-row tile, head sizes 64 and 128, segment masks, attention
// dropout; the fallbacks (fp32, head size 80, misaligned tensors) and bitwise determinism.
#include <cstdint>
#include <string>

#include "kernels/attention/attention.h"
#include "tests/gpu/gpu_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

namespace {

struct Case {
  int B, T, NH, NKV, HS;
  bool segments;
  float dropout;
  HeadSlice heads{};  // a TP rank's share of the layer's heads (dropout masks by the layer's head)
  std::size_t qkv() const { return std::size_t(B) * T * (NH + 2 * NKV) * HS; }
  std::size_t out() const { return std::size_t(B) * T * NH * HS; }
  std::size_t lse() const { return std::size_t(B) * NH * T; }
};

// Outputs of one backend on one case: out, lse, dqkv as floats and the raw bytes of all three.
struct Result {
  std::vector<float> out, lse, dqkv;
  std::vector<unsigned char> bits;
};

std::vector<int32_t> segments_of(const Case& k) {
  std::vector<int32_t> seg(std::size_t(k.B) * k.T);
  for (int b = 0; b < k.B; ++b)
    for (int i = 0; i < k.T; ++i) seg[std::size_t(b) * k.T + i] = (i * 3) / k.T + b;  // 3 documents per row
  return seg;
}

// Forward + backward of `k` on GPU backend b (dtype t); every tensor starts `shift` elements past its
// buffer's (256-byte aligned) start, so shift 1 misaligns them all.
Result run_case(Backend& b, DType t, const Case& k, int shift = 0) {
  auto padded = [&](std::vector<float> v) {
    v.insert(v.begin(), std::size_t(shift), 0.0f);
    return v;
  };
  const std::size_t es = dtype_size(t);
  Buf q = upload(b, t, padded(rounded(t, randn(k.qkv(), 41)))),
      dO = upload(b, t, padded(rounded(t, randn(k.out(), 42))));
  Buf o(b, (k.out() + shift) * es), l(b, k.lse() * 4), dq(b, (k.qkv() + shift) * es), s = upload_i32(b, segments_of(k));
  auto at = [&](const Buf& buf) { return static_cast<char*>(buf.get()) + shift * es; };
  const int32_t* seg = k.segments ? s.i() : nullptr;
  const uint64_t seed = 777, offset = 12;
  b.attention_forward(at(o), l.f(), at(q), seg, k.B, k.T, k.NH, k.NKV, k.HS, k.dropout, seed, offset, k.heads);
  b.attention_backward(at(dq), at(dO), at(q), at(o), l.f(), seg, k.B, k.T, k.NH, k.NKV, k.HS, k.dropout, seed, offset,
                       k.heads);
  Result r{download(b, t, at(o), k.out()), download_f32(b, l, k.lse()), download(b, t, at(dq), k.qkv()), {}};
  for (const std::vector<float>* v : {&r.out, &r.lse, &r.dqkv}) {
    const auto* p = reinterpret_cast<const unsigned char*>(v->data());
    r.bits.insert(r.bits.end(), p, p + v->size() * sizeof(float));
  }
  return r;
}

Result run_cpu(DType t, const Case& k) {
  // The CPU twin reads the same 16-bit-rounded inputs in fp32.
  std::unique_ptr<Backend> c = make_backend("cpu", DType::F32);
  const std::vector<float> qkv = rounded(t, randn(k.qkv(), 41)), dout = rounded(t, randn(k.out(), 42));
  Buf q = upload_f32(*c, qkv), dO = upload_f32(*c, dout), o(*c, k.out() * 4), l(*c, k.lse() * 4), dq(*c, k.qkv() * 4),
      s = upload_i32(*c, segments_of(k));
  const int32_t* seg = k.segments ? s.i() : nullptr;
  c->attention_forward(o.get(), l.f(), q.get(), seg, k.B, k.T, k.NH, k.NKV, k.HS, k.dropout, 777, 12, k.heads);
  c->attention_backward(dq.get(), dO.get(), q.get(), o.get(), l.f(), seg, k.B, k.T, k.NH, k.NKV, k.HS, k.dropout, 777,
                        12, k.heads);
  return Result{download_f32(*c, o, k.out()), download_f32(*c, l, k.lse()), download_f32(*c, dq, k.qkv()), {}};
}

std::unique_ptr<Backend> gpu_with(DType t, AttentionBackend impl) {
  return make_backend("cuda", t, BackendOptions{impl, true});
}

void check_close(const char* what, const Result& got, const Result& ref, DType t) {
  // bf16 dqkv goes through 16-bit P and dS operands and a 16-bit result: a little more slack.
  GPTRAIN_CHECK_CLOSE(std::string(what) + " out", got.out, ref.out, tol(t));
  GPTRAIN_CHECK_CLOSE(std::string(what) + " lse", got.lse, ref.lse, t == DType::F32 ? 1e-5 : 1e-3);
  GPTRAIN_CHECK_CLOSE(std::string(what) + " dqkv", got.dqkv, ref.dqkv, t == DType::F32 ? 1e-5 : 2 * tol(t));
}

const Case kTcCases[] = {
    {2, 128, 4, 4, 64, false, 0.0f},           // MHA, 2 whole tiles
    {2, 150, 8, 2, 64, false, 0.0f},           // GQA 4:1, ragged last tile
    {1, 37, 4, 1, 128, false, 0.0f},           // MQA, HS 128, less than one tile
    {1, 200, 4, 2, 128, true, 0.0f},           // segments, HS 128
    {2, 100, 4, 2, 64, false, 0.15f},          // attention dropout
    {1, 130, 2, 1, 64, true, 0.1f},            // segments + dropout, one row past two tiles
    {2, 100, 2, 1, 64, false, 0.15f, {4, 8}},  // dropout on heads 4..5 of 8 (a TP rank's share)
};

}  // namespace

TEST_CASE("gpu tensor-core attention bf16/fp16 vs cpu twin", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::BF16, DType::F16}) {
    auto g = gpu_with(t, AttentionBackend::Flash);
    for (const Case& k : kTcCases) {
      INFO("dtype " << dtype_name(t) << " B=" << k.B << " T=" << k.T << " NH=" << k.NH << " NKV=" << k.NKV
                    << " HS=" << k.HS << " segments=" << k.segments << " dropout=" << k.dropout);
      REQUIRE(std::string(cuda::own_attention_kernel(true, t, k.HS)) == "tc");
      check_close("tc vs cpu", run_case(*g, t, k), run_cpu(t, k), t);
    }
  }
}

TEST_CASE("gpu tensor-core attention vs the fma flash kernels", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::BF16, DType::F16}) {
    auto tc = gpu_with(t, AttentionBackend::Flash);
    auto fma = gpu_with(t, AttentionBackend::FlashFma);
    for (const Case& k : {kTcCases[1], kTcCases[3], kTcCases[5]}) {
      INFO("dtype " << dtype_name(t) << " T=" << k.T << " HS=" << k.HS);
      // Both round their outputs to 16 bits; the tc kernels also round P and dS: compare at the 16-bit tolerance.
      check_close("tc vs fma", run_case(*tc, t, k), run_case(*fma, t, k), t);
    }
  }
}

TEST_CASE("gpu tensor-core attention is deterministic (same bits twice)", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  for (DType t : {DType::BF16, DType::F16}) {
    auto g = gpu_with(t, AttentionBackend::Flash);
    for (const Case& k : {kTcCases[1], kTcCases[4]}) {
      const Result a = run_case(*g, t, k), b = run_case(*g, t, k);
      REQUIRE(a.bits.size() == b.bits.size());
      CHECK(std::memcmp(a.bits.data(), b.bits.data(), a.bits.size()) == 0);
    }
  }
}

TEST_CASE("gpu own attention falls back to the fma kernels where tensor cores do not apply", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  CHECK(std::string(cuda::own_attention_kernel(true, DType::F32, 64)) == "fma");
  CHECK(std::string(cuda::own_attention_kernel(true, DType::BF16, 80)) == "fma");
  CHECK(std::string(cuda::own_attention_kernel(false, DType::BF16, 64)) == "fma");
  const Case hs80{1, 70, 4, 2, 80, false, 0.0f};
  check_close("bf16 HS 80 (fma)", run_case(*gpu_with(DType::BF16, AttentionBackend::Flash), DType::BF16, hs80),
              run_cpu(DType::BF16, hs80), DType::BF16);
  const Case f32{1, 70, 4, 2, 64, true, 0.1f};
  check_close("fp32 flash (fma)", run_case(*gpu_with(DType::F32, AttentionBackend::Flash), DType::F32, f32),
              run_cpu(DType::F32, f32), DType::F32);
  check_close("fp32 flash-fma", run_case(*gpu_with(DType::F32, AttentionBackend::FlashFma), DType::F32, f32),
              run_cpu(DType::F32, f32), DType::F32);
  // Tensors one element off 16-byte alignment: the tc kernels' vector loads cannot run, the fma ones do.
  const Case k{1, 70, 4, 2, 64, false, 0.0f};
  check_close("misaligned bf16 (fma)", run_case(*gpu_with(DType::BF16, AttentionBackend::Flash), DType::BF16, k, 1),
              run_cpu(DType::BF16, k), DType::BF16);
}
