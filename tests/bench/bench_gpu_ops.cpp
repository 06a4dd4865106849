// GPU op benchmark (CUDA backend): time per call and TFLOP/s (or GB/s) of the ops of one GPT-2
// layer at micro-batch B, sequence T, width C, in the compute dtype (default bf16), with attention
// forward/backward for each --attention-backend (flash: own tensor-core kernels for bf16/fp16 with head
// size 64/128, else the FMA ones; flash-fma: own FMA kernels; cudnn: cuDNN forward and backward). Prints a table.
// Usage: bench_gpu_ops [--B 8] [--T 1024] [--C 768] [--heads 12] [--dtype bf16|fp16|fp32] [--reps 20]
//                      [--square-gemms 1]
// FLOPs counted: linear 2*N*IC*OC forward, 4*N*IC*OC backward; causal attention forward
// 2*B*NH*T*T*HS (QK^T and PV over the causal half), backward 2.5x that (five products; the
// recomputation of QK^T is not counted) — the "useful work" convention of FlashAttention's benchmarks.
// Bytes counted for memory-bound ops: each tensor read or written once. The MoE rows time the expert
// GEMM (one cuBLASLt call per expert, or per source-rank chunk) against a dense GEMM of the same FLOPs:
// the row that says whether a grouped or batched GEMM is worth writing. The square GEMM rows (4096^3,
// 8192^3, independent of the layer shape; --square-gemms 0 leaves them out) compare fp8_gemm (E4M3 x E4M3,
// output in the compute dtype, fast accumulation on, and off at 8192) with the compute dtype's GEMM
// (matmul_forward).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/common/error.h"
#include "kernels/backend.h"

using namespace gptrain;

namespace {

struct Args {
  int B = 8, T = 1024, C = 768, heads = 12, reps = 20;
  bool square_gemms = true;
  DType t = DType::BF16;
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    check(i + 1 < argc, "bench_gpu_ops: {} needs a value", k);
    const std::string v = argv[++i];
    if (k == "--B")
      a.B = std::stoi(v);
    else if (k == "--T")
      a.T = std::stoi(v);
    else if (k == "--C")
      a.C = std::stoi(v);
    else if (k == "--heads")
      a.heads = std::stoi(v);
    else if (k == "--reps")
      a.reps = std::stoi(v);
    else if (k == "--square-gemms")
      a.square_gemms = std::stoi(v) != 0;
    else if (k == "--dtype")
      a.t = v == "fp32"   ? DType::F32
            : v == "fp16" ? DType::F16
            : v == "bf16" ? DType::BF16
                          : (fail("bench_gpu_ops: --dtype {}: expected bf16, fp16 or fp32", v), DType::F32);
    else
      fail("bench_gpu_ops: unknown flag {} (expected --B --T --C --heads --dtype --reps --square-gemms)", k);
  }
  check(a.C % a.heads == 0, "bench_gpu_ops: --C {} must be a multiple of --heads {}", a.C, a.heads);
  return a;
}

// Mean seconds per call over `reps` calls after two warm-up calls (the first builds GEMM/cuDNN plans).
double time_of(Backend& b, const std::function<void()>& f, int reps) {
  f();
  f();
  b.synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < reps; ++i) f();
  b.synchronize();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
}

void* random_buffer(Backend& b, DType t, std::size_t n, float scale, uint32_t seed) {
  std::vector<float> host(n);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  for (float& x : host) x = d(rng);
  void* f32 = b.alloc(n * 4);
  b.copy_to_device(f32, host.data(), n * 4);
  void* out = b.alloc(n * dtype_size(t));
  b.convert(out, t, f32, DType::F32, n);
  b.synchronize();
  b.release(f32);
  return out;
}

void row(const char* op, double sec, double flops, double bytes) {
  if (flops > 0)
    std::printf("| %-34s | %9.3f | %9.1f TFLOP/s |\n", op, sec * 1e3, flops / sec / 1e12);
  else
    std::printf("| %-34s | %9.3f | %9.1f GB/s    |\n", op, sec * 1e3, bytes / sec / 1e9);
}

// FP8 against the compute dtype's GEMM at S^3: out (S, S) = x (S, S) w (S, S)^T. The FP8 operands are the
// casts of the same random matrices (scale 1: N(0, 1) fits E4M3). A GPU below sm_89 gets one line saying so.
void square_gemms(Backend& g, const Args& a) {
  for (const int S : {4096, 8192}) {
    const std::size_t n = std::size_t(S) * S;
    void* x = random_buffer(g, a.t, n, 1.0f, 11);
    void* w = random_buffer(g, a.t, n, 1.0f, 12);
    void* out = g.alloc(n * dtype_size(a.t));
    auto* x8 = static_cast<uint8_t*>(g.alloc(n));
    auto* w8 = static_cast<uint8_t*>(g.alloc(n));
    auto* one = static_cast<float*>(g.alloc(sizeof(float)));
    const float h_one = 1.0f;
    g.copy_to_device(one, &h_one, sizeof(float));
    g.fp8_cast_transpose(x8, nullptr, nullptr, x, one, S, S, Fp8Kind::E4M3);
    g.fp8_cast_transpose(w8, nullptr, nullptr, w, one, S, S, Fp8Kind::E4M3);
    const double f = 2.0 * S * S * S;
    const std::string dims = std::to_string(S) + "^3";
    row(("gemm " + std::string(dtype_name(a.t)) + " " + dims).c_str(),
        time_of(
            g, [&] { g.matmul_forward(out, x, w, nullptr, S, S, S); }, a.reps),
        f, 0);
    try {
      row(("gemm fp8 " + dims + " fast accum").c_str(),
          time_of(
              g,
              [&] {
                g.fp8_gemm(out, false, x8, Fp8Kind::E4M3, one, w8, Fp8Kind::E4M3, one, S, S, S, 1.0f, false, nullptr,
                           true);
              },
              a.reps),
          f, 0);
      if (S == 8192)
        row(("gemm fp8 " + dims + " promoted accum").c_str(),
            time_of(
                g,
                [&] {
                  g.fp8_gemm(out, false, x8, Fp8Kind::E4M3, one, w8, Fp8Kind::E4M3, one, S, S, S, 1.0f, false, nullptr,
                             false);
                },
                a.reps),
            f, 0);
    } catch (const Error& e) {
      std::printf("| %-34s | %s\n", ("gemm fp8 " + dims).c_str(), e.what());
    }
    for (void* p : {x, w, out, static_cast<void*>(x8), static_cast<void*>(w8), static_cast<void*>(one)}) g.release(p);
  }
}

int body(int argc, char** argv) {
  const Args a = parse(argc, argv);
  std::unique_ptr<Backend> g = make_backend("cuda", a.t);
  const int N = a.B * a.T, C = a.C, NH = a.heads, HS = C / NH, V = 50304;
  const std::size_t es = dtype_size(a.t), NC = std::size_t(N) * C;
  std::printf("bench_gpu_ops: B=%d T=%d C=%d heads=%d dtype %s, mean of %d calls\n", a.B, a.T, C, NH, dtype_name(a.t),
              a.reps);
  std::printf("| %-34s | %9s | %17s |\n", "op", "ms/call", "rate");
  std::printf("|%s|%s|%s|\n", "------------------------------------", "-----------", "-------------------");
  void* x = random_buffer(*g, a.t, NC * 4, 1.0f, 1);  // big enough for the (N, 4C) MLP activations
  void* y = random_buffer(*g, a.t, NC * 4, 1.0f, 2);
  void* w = random_buffer(*g, a.t, std::size_t(4) * C * C, 0.02f, 3);
  void* bias = random_buffer(*g, a.t, 4 * C, 0.02f, 4);
  float* dw = static_cast<float*>(g->alloc(std::size_t(4) * C * C * 4));
  float* db = static_cast<float*>(g->alloc(4 * C * 4));
  g->fill_zero(dw, std::size_t(4) * C * C * 4);
  g->fill_zero(db, 4 * C * 4);
  const struct {
    const char* name;
    int IC, OC;
  } linears[] = {{"qkv", C, 3 * C}, {"attn proj", C, C}, {"mlp fc", C, 4 * C}, {"mlp proj", 4 * C, C}};
  for (const auto& l : linears) {
    const double f = 2.0 * N * l.IC * l.OC;
    row((std::string("linear fwd ") + l.name).c_str(),
        time_of(
            *g, [&] { g->matmul_forward(y, x, w, bias, N, l.IC, l.OC); }, a.reps),
        f, 0);
    row((std::string("linear bwd ") + l.name).c_str(),
        time_of(
            *g, [&] { g->matmul_backward(y, dw, db, x, x, w, N, l.IC, l.OC, false); }, a.reps),
        2 * f, 0);
  }
  {  // the GELU MLP's fc1 + GELU and fc2's backward into fc1: unfused ops, then the fused linear+GELU ops
    void* pre = g->alloc(NC * 4 * es);  // (N, 4C)
    const double f = 2.0 * N * C * 4 * C;
    row("mlp fc + gelu fwd (unfused)",
        time_of(
            *g,
            [&] {
              g->matmul_forward(pre, x, w, bias, N, C, 4 * C);
              g->gelu_forward(y, pre, 4 * NC, GeluKind::Tanh);
            },
            a.reps),
        f, 0);
    row("mlp fc + gelu fwd (fused)",
        time_of(
            *g, [&] { g->matmul_bias_gelu_forward(y, pre, x, w, bias, N, C, 4 * C, GeluKind::Tanh); }, a.reps),
        f, 0);
    // fc2 (C, 4C) backward: dinp (N, 4C) then the GELU backward, dweight, dbias
    row("mlp proj bwd + dgelu (unfused)",
        time_of(
            *g,
            [&] {
              g->matmul_backward(y, dw, db, x, pre, w, N, 4 * C, C, false);
              g->gelu_backward(y, pre, y, 4 * NC, GeluKind::Tanh);
            },
            a.reps),
        2 * f, 0);
    row("mlp proj bwd + dgelu (fused)",
        time_of(
            *g, [&] { g->matmul_dgelu_backward(y, dw, db, x, pre, pre, w, N, 4 * C, C, GeluKind::Tanh); }, a.reps),
        2 * f, 0);
    g->release(pre);
  }
  {  // LM head over the padded vocabulary, in row chunks of T so the logits fit next to everything else
    void* wte = random_buffer(*g, a.t, std::size_t(V) * C, 0.02f, 5);
    void* logits = g->alloc(std::size_t(a.T) * V * es);
    const double f = 2.0 * a.T * C * V;
    row("lm head fwd (per T rows)",
        time_of(
            *g, [&] { g->matmul_forward(logits, x, wte, nullptr, a.T, C, V); }, a.reps),
        f, 0);
    g->release(wte);
    g->release(logits);
  }
  {  // attention per backend
    const std::size_t nqkv = std::size_t(N) * 3 * C;
    void* qkv = random_buffer(*g, a.t, nqkv, 1.0f, 6);
    void* dqkv = g->alloc(nqkv * es);
    void* out = g->alloc(NC * es);
    float* lse = static_cast<float*>(g->alloc(std::size_t(N) * NH * 4));
    const double f = 2.0 * a.B * NH * double(a.T) * a.T * HS;
    for (AttentionBackend ab : {AttentionBackend::Flash, AttentionBackend::FlashFma, AttentionBackend::Cudnn}) {
      if (ab == AttentionBackend::Cudnn && a.t == DType::F32) continue;
      // One backend per attention backend (the option is fixed when it is made), on the same GPU as g,
      // whose buffers it uses once g's stream has finished writing them.
      g->synchronize();
      std::unique_ptr<Backend> ga = make_backend("cuda", a.t, BackendOptions{ab, false});
      const std::string n = attention_backend_name(ab);
      try {
        row(("attention fwd " + n).c_str(),
            time_of(
                *ga, [&] { ga->attention_forward(out, lse, qkv, nullptr, a.B, a.T, NH, NH, HS, 0.0f, 0, 0); }, a.reps),
            f, 0);
        // cudnn: the cuDNN backward graph (or the own backward where it falls back, logged once);
        // flash: the own tensor-core backward for bf16/fp16 HS 64/128; flash-fma: the own FMA backward.
        row(("attention bwd " + n).c_str(),
            time_of(
                *ga, [&] { ga->attention_backward(dqkv, y, qkv, out, lse, nullptr, a.B, a.T, NH, NH, HS, 0.0f, 0, 0); },
                a.reps),
            2.5 * f, 0);
      } catch (const Error& e) {
        std::printf("| attention %-24s | %9s | %17s |  (%s)\n", n.c_str(), "-", "not run", e.what());
      }
    }
    g->release(qkv);
    g->release(dqkv);
    g->release(out);
    g->release(lse);
  }
  {  // memory-bound ops
    float* mean = static_cast<float*>(g->alloc(N * 4));
    float* rstd = static_cast<float*>(g->alloc(N * 4));
    row("layernorm fwd",
        time_of(
            *g, [&] { g->layernorm_forward(y, mean, rstd, x, w, bias, N, C, 1e-5f); }, a.reps),
        0, 2.0 * NC * es);
    row("layernorm bwd",
        time_of(
            *g, [&] { g->layernorm_backward(y, dw, db, x, x, w, mean, rstd, N, C); }, a.reps),
        0, 4.0 * NC * es);
    row("gelu fwd (N, 4C)",
        time_of(
            *g, [&] { g->gelu_forward(y, x, 4 * NC, GeluKind::Tanh); }, a.reps),
        0, 8.0 * NC * es);
    row("gelu bwd (N, 4C)",
        time_of(
            *g, [&] { g->gelu_backward(y, x, y, 4 * NC, GeluKind::Tanh); }, a.reps),
        0, 12.0 * NC * es);
    row("residual add",
        time_of(
            *g, [&] { g->add(y, x, y, NC); }, a.reps),
        0, 3.0 * NC * es);
    // pre-norm residual update: add then layernorm (5 tensor passes) vs the fused op (4 passes)
    void* res = g->alloc(NC * es);
    row("add + layernorm fwd (unfused)",
        time_of(
            *g,
            [&] {
              g->add(res, x, y, NC);
              g->layernorm_forward(y, mean, rstd, res, w, bias, N, C, 1e-5f);
            },
            a.reps),
        0, 5.0 * NC * es);
    row("add + layernorm fwd (fused)",
        time_of(
            *g, [&] { g->residual_layernorm_forward(res, y, mean, rstd, x, res, w, bias, N, C, 1e-5f); }, a.reps),
        0, 4.0 * NC * es);
    g->release(res);
    g->release(mean);
    g->release(rstd);
  }
  {  // cross-entropy over T rows of the padded vocabulary, AdamW over 124M parameters
    void* logits = random_buffer(*g, a.t, std::size_t(a.T) * V, 2.0f, 7);
    std::vector<int32_t> tg(a.T);
    for (int i = 0; i < a.T; ++i) tg[i] = (i * 131) % 50257;
    auto* targets = static_cast<int32_t*>(g->alloc(a.T * 4));
    g->copy_to_device(targets, tg.data(), a.T * 4);
    auto* st = static_cast<float*>(g->alloc(4 * a.T * 4));
    XentStats s{st, st + a.T, st + 2 * a.T};
    float* dloss = st + 3 * a.T;
    g->fill_zero(dloss, a.T * 4);
    const double lb = double(a.T) * V * es;
    row("xent stats (per T rows)",
        time_of(
            *g, [&] { g->xent_stats(s, logits, targets, a.T, V, 50257, 0); }, a.reps),
        0, lb);
    row("xent backward (per T rows)",
        time_of(
            *g, [&] { g->xent_backward(logits, logits, targets, s.row_max, s.row_sumexp, dloss, a.T, V, 50257, 0); },
            a.reps),
        0, 2 * lb);
    g->release(logits);
    g->release(targets);
    g->release(st);
    const std::size_t P = 124000000;
    float* buf = static_cast<float*>(g->alloc(P * 4 * 4));
    void* model = g->alloc(P * es);
    g->fill_zero(buf, P * 16);
    row("adamw (124M params)",
        time_of(
            *g,
            [&] {
              g->adamw_update(buf, model, buf + P, buf + 2 * P, buf + 3 * P, P, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1,
                              1.0f);
            },
            a.reps),
        0, double(P) * (4 * 4 + 3 * 4 + es));
    g->release(buf);
    g->release(model);
  }
  {  // MoE expert GEMMs: 8 experts of width F = 2C, top-2, R = 2N rows spread evenly, as one cuBLASLt call
     // per expert, and per chunk (4 per expert: EP 4's source ranks); the dense GEMM of the same FLOPs
     // (N x C -> 4C) is the baseline a grouped or batched GEMM would have to beat the loop against.
    const int E = 8, F = 2 * C, R = 2 * N;
    void* we = random_buffer(*g, a.t, std::size_t(E) * F * C, 0.02f, 7);
    float* dwe = static_cast<float*>(g->alloc(std::size_t(E) * F * C * 4));
    void* dxe = g->alloc(std::size_t(R) * C * es);  // (R, C) input gradient
    g->fill_zero(dwe, std::size_t(E) * F * C * 4);
    std::vector<int32_t> whole(E, R / E), chunked(4 * E, R / E / 4);
    for (int e = 0; e < E; ++e) chunked[4 * e + 3] += R / E - 4 * (R / E / 4);
    const double f = 2.0 * R * C * F;
    row("moe fc1 fwd, 8 experts, top-2",
        time_of(
            *g, [&] { g->moe_grouped_matmul_forward(y, x, we, whole.data(), E, 1, C, F); }, a.reps),
        f, 0);
    row("moe fc1 fwd, 4 chunks per expert",
        time_of(
            *g, [&] { g->moe_grouped_matmul_forward(y, x, we, chunked.data(), E, 4, C, F); }, a.reps),
        f, 0);
    row("moe fc1 bwd, 8 experts, top-2",
        time_of(
            *g, [&] { g->moe_grouped_matmul_backward(dxe, dwe, y, x, we, whole.data(), E, 1, C, F); }, a.reps),
        2 * f, 0);
    row("moe fc1 bwd, 4 chunks per expert",
        time_of(
            *g, [&] { g->moe_grouped_matmul_backward(dxe, dwe, y, x, we, chunked.data(), E, 4, C, F); }, a.reps),
        2 * f, 0);
    row("dense fwd, same FLOPs (C -> 4C)",
        time_of(
            *g, [&] { g->matmul_forward(y, x, w, nullptr, N, C, 4 * C); }, a.reps),
        f, 0);
    g->release(we);
    g->release(dwe);
    g->release(dxe);
  }
  if (a.square_gemms) square_gemms(*g, a);
  g->release(x);
  g->release(y);
  g->release(w);
  g->release(bias);
  g->release(dw);
  g->release(db);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return run_main("bench_gpu_ops", body, argc, argv); }
