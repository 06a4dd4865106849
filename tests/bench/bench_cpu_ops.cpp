// CPU op benchmark: GFLOP/s of the linear layers and attention of GPT-2 124M (C=768, 12 heads of 64,
// vocab 50304) at micro-batch B and sequence lengths T, forward and backward, plus the time of the
// memory-bound ops per call. Usage: bench_cpu_ops [--B 4] [--T 64,256,1024] [--reps 5] [--ops linear,attention,memory]
// FLOPs counted: linear 2*N*IC*OC forward, 4*N*IC*OC backward (dinp + dweight); causal attention
// 2*B*NH*T*T*HS forward (QK^T and PV over the causal half), 5*B*NH*T*T*HS backward (five products),
// i.e. the useful work, not the padded diagonal blocks. --ops picks sections: linear,attention,memory,moe
// (moe: 8 experts top-2 against the dense MLP of the same active parameters; not in the default set).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <ctime>
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

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Best wall time of `reps` calls after a warm-up. On a shared machine the wall time depends on the
// neighbours; the CPU time per call (all threads) is recorded too, as a load-independent measure.
struct Timing {
  double wall = 1e30, cpu = 1e30;
};
Timing g_last;

double seconds_of(const std::function<void()>& f, int reps) {
  f();  // warm-up: page faults, OpenBLAS buffers
  Timing t;
  for (int r = 0; r < reps; ++r) {
    const double c0 = process_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.wall = std::min(t.wall, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    t.cpu = std::min(t.cpu, process_cpu_seconds() - c0);
  }
  g_last = t;
  return t.wall;
}

std::vector<float> randv(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::size_t p = 0;
  while (p < s.size()) {
    const std::size_t q = s.find(',', p);
    out.push_back(std::stoi(s.substr(p, q == std::string::npos ? std::string::npos : q - p)));
    if (q == std::string::npos) break;
    p = q + 1;
  }
  return out;
}

// Mixture of experts, 8 experts top-2 with expert FFN width 1536, against the dense MLP of the same active
// parameters per token (width 2 * 1536 = 3072 = GPT-2's): the expert GEMMs (fc1 + fc2 of the routed rows,
// one BLAS call per expert, then with each expert's rows in 4 chunks as under EP 4) and the dense GEMMs
// (fc + fcproj) in the same run, forward and backward, and the routing around the expert GEMMs (router,
// dispatch plan, permute, unpermute) alone. Dropless.
void moe_rows(Backend& be, int B, int T, int C, int reps) {
  const int N = B * T, E = 8, K = 2, F = 1536;
  auto x = randv(static_cast<std::size_t>(N) * C, 21), logits = randv(static_cast<std::size_t>(N) * E, 22);
  auto w1 = randv(static_cast<std::size_t>(E) * F * C, 23), w2 = randv(static_cast<std::size_t>(E) * C * F, 24);
  std::vector<float> probs(static_cast<std::size_t>(N) * K), scores(logits.size());
  std::vector<int32_t> experts(probs.size()), dest(probs.size()), seg(E);
  auto route = [&] {
    be.moe_router_forward(probs.data(), experts.data(), scores.data(), logits.data(), N, E, K, MoeScore::Softmax,
                          false);
    be.moe_dispatch_plan(dest.data(), seg.data(), experts.data(), probs.data(), N, E, K, -1, MoeDropPolicy::Probs,
                         false);
  };
  route();
  const int R = N * K;
  std::vector<float> xp(static_cast<std::size_t>(R) * C), h(static_cast<std::size_t>(R) * F),
      yp(static_cast<std::size_t>(R) * C), y(static_cast<std::size_t>(N) * C);
  std::vector<float> dh(h.size()), dxp(xp.size()), dw1(w1.size()), dw2(w2.size());
  const double mf = seconds_of(
      [&] {
        be.moe_grouped_matmul_forward(h.data(), xp.data(), w1.data(), seg.data(), E, 1, C, F);
        be.moe_grouped_matmul_forward(yp.data(), h.data(), w2.data(), seg.data(), E, 1, F, C);
      },
      reps);
  const double mfc = g_last.cpu;
  const double mb = seconds_of(
      [&] {
        be.moe_grouped_matmul_backward(dh.data(), dw2.data(), yp.data(), h.data(), w2.data(), seg.data(), E, 1, F, C);
        be.moe_grouped_matmul_backward(dxp.data(), dw1.data(), dh.data(), xp.data(), w1.data(), seg.data(), E, 1, C, F);
      },
      reps);
  const double mbc = g_last.cpu;
  // The same expert GEMMs with each expert's rows in 4 chunks, one GEMM each for the outputs and dinp: what
  // an expert's rank runs under EP 4 (one chunk per source rank), for the cost of EP-independent rounding.
  std::vector<int32_t> chunk4(static_cast<std::size_t>(E) * 4);
  for (int e = 0; e < E; ++e)
    for (int j = 0; j < 4; ++j) chunk4[e * 4 + j] = seg[e] / 4 + (j == 3 ? seg[e] % 4 : 0);
  const double cf = seconds_of(
      [&] {
        be.moe_grouped_matmul_forward(h.data(), xp.data(), w1.data(), chunk4.data(), E, 4, C, F);
        be.moe_grouped_matmul_forward(yp.data(), h.data(), w2.data(), chunk4.data(), E, 4, F, C);
      },
      reps);
  const double cfc = g_last.cpu;
  const double cb = seconds_of(
      [&] {
        be.moe_grouped_matmul_backward(dh.data(), dw2.data(), yp.data(), h.data(), w2.data(), chunk4.data(), E, 4, F,
                                       C);
        be.moe_grouped_matmul_backward(dxp.data(), dw1.data(), dh.data(), xp.data(), w1.data(), chunk4.data(), E, 4, C,
                                       F);
      },
      reps);
  const double cbc = g_last.cpu;
  const double rt = seconds_of(
      [&] {
        route();
        be.moe_permute(xp.data(), x.data(), dest.data(), N, K, C, R);
        be.moe_unpermute(y.data(), yp.data(), probs.data(), dest.data(), N, K, C);
      },
      reps);
  // Dense MLP of the same active parameters: fc (C -> 2F) and fcproj (2F -> C) over the N tokens.
  auto d1 = randv(static_cast<std::size_t>(2) * F * C, 25), d2 = randv(static_cast<std::size_t>(C) * 2 * F, 26);
  std::vector<float> dhid(static_cast<std::size_t>(N) * 2 * F), dy(y.size()), ddh(dhid.size()), ddx(x.size()),
      dd1(d1.size()), dd2(d2.size());
  const double df = seconds_of(
      [&] {
        be.matmul_forward(dhid.data(), x.data(), d1.data(), nullptr, N, C, 2 * F);
        be.matmul_forward(dy.data(), dhid.data(), d2.data(), nullptr, N, 2 * F, C);
      },
      reps);
  const double dfc = g_last.cpu;
  const double db = seconds_of(
      [&] {
        be.matmul_backward(ddh.data(), dd2.data(), nullptr, dy.data(), dhid.data(), d2.data(), N, 2 * F, C, false);
        be.matmul_backward(ddx.data(), dd1.data(), nullptr, ddh.data(), x.data(), d1.data(), N, C, 2 * F, false);
      },
      reps);
  const double f = 2.0 * 2.0 * N * C * 2.0 * F;  // forward FLOPs of both (equal by construction)
  std::printf("%-22s %6d %10.2f %10.1f %10.2f %10.1f %10.1f %10.1f\n", "moe 8x1536 top-2 GEMMs", T, mf * 1e3,
              f / mf * 1e-9, mb * 1e3, 2 * f / mb * 1e-9, f / mfc * 1e-9, 2 * f / mbc * 1e-9);
  std::printf("%-22s %6d %10.2f %10.1f %10.2f %10.1f %10.1f %10.1f\n", "moe GEMMs, 4 chunks", T, cf * 1e3,
              f / cf * 1e-9, cb * 1e3, 2 * f / cb * 1e-9, f / cfc * 1e-9, 2 * f / cbc * 1e-9);
  std::printf("%-22s %6d %10.2f %10.1f %10.2f %10.1f %10.1f %10.1f\n", "dense 3072 same active", T, df * 1e3,
              f / df * 1e-9, db * 1e3, 2 * f / db * 1e-9, f / dfc * 1e-9, 2 * f / g_last.cpu * 1e-9);
  std::printf(
      "%-22s %6d %10.2f   (router, dispatch plan, permute, unpermute; expert GEMMs / dense %.2fx fwd, %.2fx bwd)\n",
      "moe routing fwd", T, rt * 1e3, mf / df, mb / db);
}

int body(int argc, char** argv) {
  int B = 4, reps = 5;
  std::vector<int> Ts = {64, 256, 1024};
  std::string ops = "linear,attention,memory";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) fail("bench_cpu_ops: {} needs a value", a);
    if (a == "--B")
      B = std::stoi(argv[++i]);
    else if (a == "--T")
      Ts = parse_list(argv[++i]);
    else if (a == "--reps")
      reps = std::stoi(argv[++i]);
    else if (a == "--ops")
      ops = argv[++i];
    else
      fail("bench_cpu_ops: unknown flag {} (expected --B, --T, --reps, --ops)", a);
  }
  auto be = make_backend("cpu", DType::F32);
  const int C = 768, NH = 12, HS = 64, V = 50304;
  std::printf("# gptrain CPU ops, GPT-2 124M shapes, B=%d, OpenMP threads %d, best of %d\n", B, omp_get_max_threads(),
              reps);
  std::printf(
      "# wall: best wall-clock time; cpu GF/s: FLOPs per second of process CPU time (all threads),\n"
      "# which does not depend on what else the machine is running\n");
  std::printf("%-22s %6s %10s %10s %10s %10s %10s %10s\n", "op", "T", "fwd ms", "fwd GF/s", "bwd ms", "bwd GF/s",
              "fwd cpuGF", "bwd cpuGF");
  for (int T : Ts) {
    const int N = B * T;
    struct Lin {
      const char* name;
      int IC, OC;
    };
    for (const Lin l : std::vector<Lin>{Lin{"linear qkv 768x2304", C, 3 * C}, Lin{"linear proj 768x768", C, C},
                                        Lin{"linear fc 768x3072", C, 4 * C}, Lin{"linear fcproj 3072x768", 4 * C, C},
                                        Lin{"lm head 768x50304", C, V}}) {
      if (ops.find("linear") == std::string::npos) break;
      auto x = randv(static_cast<std::size_t>(N) * l.IC, 1), w = randv(static_cast<std::size_t>(l.OC) * l.IC, 2);
      auto b = randv(l.OC, 3);
      std::vector<float> out(static_cast<std::size_t>(N) * l.OC), dx(x.size()), dw(w.size()), db(l.OC);
      const double tf =
          seconds_of([&] { be->matmul_forward(out.data(), x.data(), w.data(), b.data(), N, l.IC, l.OC); }, reps);
      const double cf = g_last.cpu;
      const double tb = seconds_of(
          [&] {
            be->matmul_backward(dx.data(), dw.data(), db.data(), out.data(), x.data(), w.data(), N, l.IC, l.OC, false);
          },
          reps);
      const double f = 2.0 * N * l.IC * l.OC;
      std::printf("%-22s %6d %10.2f %10.1f %10.2f %10.1f %10.1f %10.1f\n", l.name, T, tf * 1e3, f / tf * 1e-9, tb * 1e3,
                  2 * f / tb * 1e-9, f / cf * 1e-9, 2 * f / g_last.cpu * 1e-9);
    }
    if (ops.find("attention") != std::string::npos) {
      auto qkv = randv(static_cast<std::size_t>(N) * 3 * C, 4), dout = randv(static_cast<std::size_t>(N) * C, 5);
      std::vector<float> out(static_cast<std::size_t>(N) * C), lse(static_cast<std::size_t>(B) * NH * T),
          dqkv(qkv.size());
      const double tf = seconds_of(
          [&] { be->attention_forward(out.data(), lse.data(), qkv.data(), nullptr, B, T, NH, NH, HS, 0.0f, 0, 0); },
          reps);
      const double cf = g_last.cpu;
      const double tb = seconds_of(
          [&] {
            be->attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), nullptr, B, T, NH, NH,
                                   HS, 0.0f, 0, 0);
          },
          reps);
      const double f = 2.0 * B * NH * static_cast<double>(T) * T * HS;
      std::printf("%-22s %6d %10.2f %10.1f %10.2f %10.1f %10.1f %10.1f\n", "attention causal", T, tf * 1e3,
                  f / tf * 1e-9, tb * 1e3, 2.5 * f / tb * 1e-9, f / cf * 1e-9, 2.5 * f / g_last.cpu * 1e-9);
      const double td = seconds_of(
          [&] { be->attention_forward(out.data(), lse.data(), qkv.data(), nullptr, B, T, NH, NH, HS, 0.1f, 7, 0); },
          reps);
      std::printf("%-22s %6d %10.2f %10.1f %10s %10s %10.1f %10s\n", "attention + dropout", T, td * 1e3, f / td * 1e-9,
                  "-", "-", f / g_last.cpu * 1e-9, "-");
    }
    if (ops.find("memory") != std::string::npos) {  // memory-bound ops, per call (ms)
      auto x = randv(static_cast<std::size_t>(N) * C, 6), w = randv(C, 7), bb = randv(C, 8);
      std::vector<float> y(x.size()), mean(N), rstd(N), dx(x.size()), dw(C), db(C);
      const double tf = seconds_of(
          [&] {
            be->layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), bb.data(), N, C, 1e-5f);
          },
          reps);
      const double cf = g_last.cpu;
      const double tb = seconds_of(
          [&] {
            be->layernorm_backward(dx.data(), dw.data(), db.data(), y.data(), x.data(), w.data(), mean.data(),
                                   rstd.data(), N, C);
          },
          reps);
      const double cb = g_last.cpu;
      std::printf("%-22s %6d %10.2f %10s %10.2f %10s %10s %10s   cpu ms %.2f / %.2f\n", "layernorm", T, tf * 1e3, "-",
                  tb * 1e3, "-", "-", "-", cf * 1e3, cb * 1e3);
      // the residual add + LayerNorm of a pre-norm block: add() then layernorm_forward(), and the fused op
      auto x2 = randv(x.size(), 11);
      std::vector<float> res(x.size());
      const double tu = seconds_of(
          [&] {
            be->add(res.data(), x.data(), x2.data(), x.size());
            be->layernorm_forward(y.data(), mean.data(), rstd.data(), res.data(), w.data(), bb.data(), N, C, 1e-5f);
          },
          reps);
      const double cu = g_last.cpu;
      const double tr = seconds_of(
          [&] {
            be->residual_layernorm_forward(res.data(), y.data(), mean.data(), rstd.data(), x.data(), x2.data(),
                                           w.data(), bb.data(), N, C, 1e-5f);
          },
          reps);
      std::printf("%-22s %6d unfused %.2f ms, fused %.2f ms (ratio %.2f; cpu ms %.2f / %.2f)\n", "add + layernorm fwd",
                  T, tu * 1e3, tr * 1e3, tu / tr, cu * 1e3, g_last.cpu * 1e3);
      auto h = randv(static_cast<std::size_t>(N) * 4 * C, 9);
      std::vector<float> g(h.size()), dg(h.size());
      const double gf = seconds_of([&] { be->gelu_forward(g.data(), h.data(), h.size(), GeluKind::Tanh); }, reps);
      const double gfc = g_last.cpu;
      const double gb =
          seconds_of([&] { be->gelu_backward(dg.data(), h.data(), g.data(), h.size(), GeluKind::Tanh); }, reps);
      std::printf("%-22s %6d %10.2f %10s %10.2f %10s %10s %10s   cpu ms %.2f / %.2f\n", "gelu tanh (N x 3072)", T,
                  gf * 1e3, "-", gb * 1e3, "-", "-", "-", gfc * 1e3, g_last.cpu * 1e3);
      auto logits = randv(static_cast<std::size_t>(N) * V, 10);
      std::vector<int32_t> tgt(N, 17);
      std::vector<float> mx(N), se(N), tl(N), dl(N, 1.0f / N);
      const double xs = seconds_of(
          [&] {
            be->xent_stats(XentStats{mx.data(), se.data(), tl.data()}, logits.data(), tgt.data(), N, V, 50257, 0);
          },
          reps);
      const double xsc = g_last.cpu;
      const double xb = seconds_of(
          [&] {
            be->xent_backward(logits.data(), logits.data(), tgt.data(), mx.data(), se.data(), dl.data(), N, V, 50257,
                              0);
          },
          reps);
      std::printf("%-22s %6d %10.2f %10s %10.2f %10s %10s %10s   cpu ms %.2f / %.2f\n", "xent (N x 50304)", T, xs * 1e3,
                  "-", xb * 1e3, "-", "-", "-", xsc * 1e3, g_last.cpu * 1e3);
    }
    if (ops.find("moe") != std::string::npos) moe_rows(*be, B, T, C, reps);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::run_main("bench_cpu_ops", body, argc, argv); }
