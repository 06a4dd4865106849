// cuDNN fused attention backward (kernels/attention/attention_cudnn_backward_cuda.cpp), called directly
// so that a silent fallback cannot pass for it: against the fp32 CPU twin (bf16/fp16, MHA/GQA/MQA,
// several T and head sizes), against the own flash kernels (forward and backward on the same inputs),
// deterministic mode (same bits twice), and the backend's routing with --attention-backend cudnn.
// Whole test cases print "GPTRAIN_SKIP: <reason>" when this GPU/cuDNN cannot run the cuDNN backward;
// single shapes a given cuDNN version does not take are listed as "not run" (never as a skip). The
// routing decisions (supports / supports_backward by cuDNN version, dtype and shape) run without a GPU.
#include <cstdio>
#include <string>

#include "kernels/attention/attention_cudnn.h"
#include "tests/gpu/gpu_test_util.h"

using namespace gptrain;
using namespace gptrain::gputest;

namespace {

struct Shape {
  int B, T, NH, NKV, HS;
};

std::size_t n_qkv(const Shape& k) { return std::size_t(k.B) * k.T * (k.NH + 2 * k.NKV) * k.HS; }
std::size_t n_out(const Shape& k) { return std::size_t(k.B) * k.T * k.NH * k.HS; }
std::size_t n_lse(const Shape& k) { return std::size_t(k.B) * k.NH * k.T; }

// One random attention problem; inputs already rounded to the compute dtype.
struct Problem {
  DType t;
  Shape k;
  std::vector<float> qkv, dout;
  Problem(DType dtype, Shape shape, uint32_t seed)
      : t(dtype),
        k(shape),
        qkv(rounded(dtype, randn(n_qkv(shape), seed))),
        dout(rounded(dtype, randn(n_out(shape), seed + 1))) {}
};

// The fp32 CPU twin on the rounded inputs: forward, then backward from its own out/lse.
struct Reference {
  std::vector<float> out, lse, dqkv;
};
Reference cpu_reference(const Problem& pr) {
  auto c = make_backend("cpu", DType::F32);
  const Shape& k = pr.k;
  Buf q = upload_f32(*c, pr.qkv), dout = upload_f32(*c, pr.dout);
  Buf out(*c, n_out(k) * 4), lse(*c, n_lse(k) * 4), dq(*c, n_qkv(k) * 4);
  c->attention_forward(out.get(), lse.f(), q.get(), nullptr, k.B, k.T, k.NH, k.NKV, k.HS, 0.0f, 0, 0);
  c->attention_backward(dq.get(), dout.get(), q.get(), out.get(), lse.f(), nullptr, k.B, k.T, k.NH, k.NKV, k.HS, 0.0f,
                        0, 0);
  return {download_f32(*c, out, n_out(k)), download_f32(*c, lse, n_lse(k)), download_f32(*c, dq, n_qkv(k))};
}

// Device buffers of one problem on the GPU twin.
struct Device {
  Buf qkv, dout, out, lse, dqkv;
  Device(Backend& g, const Problem& pr)
      : qkv(upload(g, pr.t, pr.qkv)),
        dout(upload(g, pr.t, pr.dout)),
        out(g, n_out(pr.k) * dtype_size(pr.t)),
        lse(g, n_lse(pr.k) * 4),
        dqkv(g, n_qkv(pr.k) * dtype_size(pr.t)) {}
};

void gpu_forward(Twins& tw, const Problem& pr, Device& d) {
  const Shape& k = pr.k;
  tw.gpu->attention_forward(d.out.get(), d.lse.f(), d.qkv.get(), nullptr, k.B, k.T, k.NH, k.NKV, k.HS, 0.0f, 0, 0);
}

bool cudnn_backward(cuda::CudnnAttention& cudnn, Twins& tw, const Problem& pr, Device& d, bool deterministic,
                    std::string* why) {
  const Shape& k = pr.k;
  return cudnn.backward(tw.cuda().stream(), pr.t, d.dqkv.get(), d.dout.get(), d.qkv.get(), d.out.get(), d.lse.f(), k.B,
                        k.T, k.NH, k.NKV, k.HS, deterministic, why);
}

bool backward_supported(Twins& tw, const Problem& pr, std::string* why) {
  const Shape& k = pr.k;
  return cuda::CudnnAttention::supports_backward(tw.cuda().device_info(), pr.t, k.T, k.NH, k.NKV, k.HS, false, 0.0f,
                                                 why);
}

// Prints the whole-test skip line and returns true when the reference shape cannot run here.
bool skip_without_cudnn_backward(DType t) {
  Twins tw(t);
  Problem probe(t, {1, 128, 4, 2, 64}, 1);
  std::string why;
  if (backward_supported(tw, probe, &why)) return false;
  std::printf("GPTRAIN_SKIP: cuDNN attention backward unsupported here: %s\n", why.c_str());
  std::fflush(stdout);
  return true;
}

// bf16/fp16 gradients pass through P^T and dS^T rounded to the compute dtype: twice the forward slack.
double grad_tol(DType t) { return 2 * tol(t); }

std::string label(const Problem& pr) {
  return std::string(dtype_name(pr.t)) + " B=" + std::to_string(pr.k.B) + " T=" + std::to_string(pr.k.T) +
         " NH=" + std::to_string(pr.k.NH) + " NKV=" + std::to_string(pr.k.NKV) + " HS=" + std::to_string(pr.k.HS);
}

const Shape kShapes[] = {
    {2, 128, 4, 4, 64},   // MHA
    {2, 256, 8, 2, 128},  // GQA, head size 128
    {1, 384, 6, 1, 64},   // MQA
    {2, 128, 4, 2, 32},   // GQA, small heads
    {1, 256, 2, 2, 80},   // head size 80 (a multiple of 8, not a power of two)
    {2, 100, 4, 2, 64},   // T not a multiple of 128 (cuDNN > 9.15 only)
};

}  // namespace

TEST_CASE("gpu cudnn attention backward vs cpu: bf16/fp16, MHA/GQA/MQA, several T and head sizes", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  if (skip_without_cudnn_backward(DType::BF16)) return;
  cuda::CudnnAttention cudnn;
  int ran = 0;
  for (DType t : {DType::BF16, DType::F16}) {
    Twins tw(t);
    tw.cuda().set_attention_backend(AttentionBackend::Flash);  // the forward under test is elsewhere
    for (const Shape& k : kShapes) {
      Problem pr(t, k, 100 + ran);
      std::string why;
      if (!backward_supported(tw, pr, &why)) {
        std::printf("not run on this cuDNN: %s: %s\n", label(pr).c_str(), why.c_str());
        continue;
      }
      INFO(label(pr));
      Reference ref = cpu_reference(pr);
      Device d(*tw.gpu, pr);
      gpu_forward(tw, pr, d);
      const bool ok = cudnn_backward(cudnn, tw, pr, d, false, &why);
      INFO("cuDNN: " << why);
      REQUIRE(ok);  // supported here, so a rejected graph is a defect of the graph, not a skip
      GPTRAIN_CHECK_CLOSE("cudnn dqkv", download(*tw.gpu, t, d.dqkv.get(), n_qkv(k)), ref.dqkv, grad_tol(t));
      ++ran;
    }
  }
  CHECK(ran >= 8);
}

TEST_CASE("gpu cudnn attention vs own flash kernels: forward and backward on the same inputs", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  if (skip_without_cudnn_backward(DType::BF16)) return;
  cuda::CudnnAttention cudnn;
  for (DType t : {DType::BF16, DType::F16}) {
    Twins tw(t);
    for (const Shape& k : {Shape{2, 128, 4, 4, 64}, Shape{2, 256, 8, 2, 128}}) {
      Problem pr(t, k, 7);
      INFO(label(pr));
      std::string why;
      // Forward: cuDNN graph vs flash kernels.
      Device fl(*tw.gpu, pr), cu(*tw.gpu, pr);
      tw.cuda().set_attention_backend(AttentionBackend::Flash);
      gpu_forward(tw, pr, fl);
      REQUIRE(cudnn.forward(tw.cuda().stream(), t, cu.out.get(), cu.lse.f(), cu.qkv.get(), k.B, k.T, k.NH, k.NKV, k.HS,
                            &why));
      GPTRAIN_CHECK_CLOSE("out cudnn vs flash", download(*tw.gpu, t, cu.out.get(), n_out(k)),
                          download(*tw.gpu, t, fl.out.get(), n_out(k)), tol(t));
      GPTRAIN_CHECK_CLOSE("lse cudnn vs flash", download_f32(*tw.gpu, cu.lse, n_lse(k)),
                          download_f32(*tw.gpu, fl.lse, n_lse(k)), 1e-3);
      // Backward from the same (flash) forward outputs: cuDNN graph vs flash kernels.
      tw.gpu->attention_backward(fl.dqkv.get(), fl.dout.get(), fl.qkv.get(), fl.out.get(), fl.lse.f(), nullptr, k.B,
                                 k.T, k.NH, k.NKV, k.HS, 0.0f, 0, 0);
      REQUIRE(cudnn.backward(tw.cuda().stream(), t, cu.dqkv.get(), fl.dout.get(), fl.qkv.get(), fl.out.get(),
                             fl.lse.f(), k.B, k.T, k.NH, k.NKV, k.HS, false, &why));
      GPTRAIN_CHECK_CLOSE("dqkv cudnn vs flash", download(*tw.gpu, t, cu.dqkv.get(), n_qkv(k)),
                          download(*tw.gpu, t, fl.dqkv.get(), n_qkv(k)), grad_tol(t));
    }
  }
}

TEST_CASE("gpu cudnn attention backward, deterministic mode: same bits twice, close to cpu", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  if (skip_without_cudnn_backward(DType::BF16)) return;
  cuda::CudnnAttention cudnn;
  Twins tw(DType::BF16);
  tw.cuda().set_attention_backend(AttentionBackend::Flash);
  Problem pr(DType::BF16, {2, 256, 8, 2, 64}, 21);
  Device a(*tw.gpu, pr), b(*tw.gpu, pr);
  gpu_forward(tw, pr, a);
  gpu_forward(tw, pr, b);
  std::string why;
  if (!cudnn_backward(cudnn, tw, pr, a, true, &why)) {
    std::printf("GPTRAIN_SKIP: no deterministic cuDNN attention backward engine here: %s\n", why.c_str());
    return;
  }
  REQUIRE(cudnn_backward(cudnn, tw, pr, b, true, &why));
  const std::size_t bytes = n_qkv(pr.k) * dtype_size(pr.t);
  CHECK(bytes_of(*tw.gpu, a.dqkv, bytes) == bytes_of(*tw.gpu, b.dqkv, bytes));
  GPTRAIN_CHECK_CLOSE("deterministic cudnn dqkv", download(*tw.gpu, pr.t, a.dqkv.get(), n_qkv(pr.k)),
                      cpu_reference(pr).dqkv, grad_tol(pr.t));
}

TEST_CASE("gpu --attention-backend cudnn: backward through cuDNN where it can, flash otherwise, never wrong", "[gpu]") {
  GPTRAIN_REQUIRE_GPU();
  if (skip_without_cudnn_backward(DType::BF16)) return;
  for (DType t : {DType::BF16, DType::F16}) {
    Twins tw(t);
    tw.cuda().set_attention_backend(AttentionBackend::Cudnn);
    // T = 100 runs the cuDNN backward on cuDNN > 9.15 and falls back to flash (one info line) before.
    for (const Shape& k : {Shape{2, 128, 4, 2, 64}, Shape{2, 100, 4, 2, 64}}) {
      Problem pr(t, k, 33);
      INFO(label(pr));
      Reference ref = cpu_reference(pr);
      Device d(*tw.gpu, pr);
      gpu_forward(tw, pr, d);
      tw.gpu->attention_backward(d.dqkv.get(), d.dout.get(), d.qkv.get(), d.out.get(), d.lse.f(), nullptr, k.B, k.T,
                                 k.NH, k.NKV, k.HS, 0.0f, 0, 0);
      GPTRAIN_CHECK_CLOSE("out", download(*tw.gpu, t, d.out.get(), n_out(k)), ref.out, tol(t));
      GPTRAIN_CHECK_CLOSE("dqkv", download(*tw.gpu, t, d.dqkv.get(), n_qkv(k)), ref.dqkv, grad_tol(t));
    }
  }
}

// The routing decisions are plain functions of the device info: checked without a GPU.
TEST_CASE("cudnn attention support decisions by cuDNN version, dtype and shape (no GPU needed)", "[gpu]") {
  using cuda::CudnnAttention;
  CudaDeviceInfo dev;
  dev.cc_major = 9;
  dev.cudnn_version = 91900;
  std::string why;
  auto fwd = [&](DType t, int T, int NH, int NKV, int HS, bool seg = false, float drop = 0.0f) {
    return CudnnAttention::supports(dev, t, T, NH, NKV, HS, seg, drop, &why);
  };
  auto bwd = [&](DType t, int T, int NH, int NKV, int HS, bool seg = false, float drop = 0.0f) {
    return CudnnAttention::supports_backward(dev, t, T, NH, NKV, HS, seg, drop, &why);
  };
  CHECK(bwd(DType::BF16, 1024, 12, 12, 64));  // GPT-2
  CHECK(bwd(DType::F16, 100, 8, 2, 128));     // GQA, ragged T on a new cuDNN
  CHECK(bwd(DType::BF16, 256, 8, 1, 80));     // MQA, head size 80
  CHECK_FALSE(bwd(DType::F32, 1024, 12, 12, 64));
  CHECK_THAT(why, Catch::Contains("fp32"));
  CHECK_FALSE(bwd(DType::BF16, 1024, 12, 12, 64, true));
  CHECK_THAT(why, Catch::Contains("segment"));
  CHECK_FALSE(bwd(DType::BF16, 1024, 12, 12, 64, false, 0.1f));
  CHECK_THAT(why, Catch::Contains("dropout"));
  CHECK_FALSE(bwd(DType::BF16, 1024, 12, 12, 60));   // not a multiple of 8
  CHECK_FALSE(bwd(DType::BF16, 1024, 12, 12, 256));  // above 128
  CHECK_FALSE(bwd(DType::BF16, 1024, 6, 4, 64));     // NH not a multiple of NKV
  CHECK(fwd(DType::BF16, 1, 4, 4, 64));
  CHECK_FALSE(bwd(DType::BF16, 1, 4, 4, 64));  // s_q = s_kv = 1: forward only
  CHECK_THAT(why, Catch::Contains("T = 1"));

  dev.cudnn_version = 91500;  // T must be a multiple of 128 for the backward only
  CHECK(fwd(DType::BF16, 100, 4, 2, 64));
  CHECK_FALSE(bwd(DType::BF16, 100, 4, 2, 64));
  CHECK_THAT(why, Catch::Contains("128"));
  CHECK(bwd(DType::BF16, 1024, 4, 2, 64));
  dev.cudnn_version = 91501;
  CHECK(bwd(DType::BF16, 100, 4, 2, 64));

  for (std::size_t v : {std::size_t(91000), std::size_t(91001)}) {  // known-bad releases: neither direction
    dev.cudnn_version = v;
    CHECK_FALSE(fwd(DType::BF16, 1024, 12, 12, 64));
    CHECK_FALSE(bwd(DType::BF16, 1024, 12, 12, 64));
  }
  dev.cudnn_version = 91002;
  CHECK(bwd(DType::BF16, 1024, 12, 12, 64));
  dev.cudnn_version = 80906;
  CHECK_FALSE(fwd(DType::BF16, 1024, 12, 12, 64));
  CHECK_THAT(why, Catch::Contains("9.0"));
  dev.cudnn_version = 91900;
  dev.cc_major = 7;
  CHECK_FALSE(bwd(DType::BF16, 1024, 12, 12, 64));
}
