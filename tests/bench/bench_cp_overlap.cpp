// bench_cp_overlap: how much of context parallelism's K/V exchange the ring hides behind attention on CPU
// ranks. Under mpirun -np CP it runs the context-parallel attention (ContextParallelHooks, forward +
// backward of one layer) on random Q/K/V, REPEAT times with each step's transfers posted before its
// block is computed (overlap) and REPEAT times transfer-then-compute, and prints from rank 0 one table row:
//     CP | seq | heads | head size | batch | plain ms | exchange ms | overlap ms | exchange ms | hidden
// where "exchange" is the time a rank spends in the ring's transfer calls (plain: the whole transfer;
// overlap: posting plus the wait left after the block's compute), the slowest rank's, and hidden =
// 1 - overlap exchange / plain exchange, the share of the exchange time the overlap hides. Each mode's
// numbers are its fastest repetition's.
//   mpirun -np 2 build/bin/bench_cp_overlap [--seq S] [--heads NH] [--head-size HS] [--batch B] [--repeat R]
#include "core/common/error.h"
#include "kernels/backend.h"
#include "parallel/comm/grid_comms.h"
#include "parallel/context/context_parallel_hooks.h"
#include "parallel/launch/mpi_runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {
using namespace gptrain;
using namespace gptrain::parallel;

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Timing {
  double wall = 1e30, exchange = 0.0;
};

int body(MpiRuntime& mpi, int argc, char** argv) {
  int B = 1, T = 4096, NH = 8, HS = 64, repeat = 5;  // T: the whole sequence
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string f = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (f == "--seq")
      T = v;
    else if (f == "--heads")
      NH = v;
    else if (f == "--head-size")
      HS = v;
    else if (f == "--batch")
      B = v;
    else if (f == "--repeat")
      repeat = v;
    else
      fail("bench_cp_overlap: unknown flag {}", f);
  }
  const int cp = mpi.world_size();
  check(cp >= 2 && T % (2 * cp) == 0, "bench_cp_overlap: run under mpirun -np CP >= 2 with --seq divisible by 2 x CP");
  GridSizes sizes;
  sizes.cp = cp;
  ProcessGrid grid(cp, mpi.rank(), sizes);
  std::unique_ptr<Backend> be = make_backend("cpu", DType::F32);
  CommOptions opts;
  opts.staging = be.get();
  GridComms comms = make_grid_comms(grid, opts, "mpi");
  const int Tl = T / cp, N = B * Tl, W = 3 * NH * HS;
  std::vector<float> qkv(std::size_t(N) * W), dout(std::size_t(N) * NH * HS);
  std::mt19937 rng(17 + mpi.rank());
  std::normal_distribution<float> g(0.0f, 1.0f);
  for (float& x : qkv) x = g(rng);
  for (float& x : dout) x = g(rng);
  std::vector<float> out(dout.size()), lse(std::size_t(B) * NH * Tl), dqkv(qkv.size());
  auto run = [&](bool overlap) {
    ContextParallelHooks hooks(no_parallel_hooks(), *comms.cp, *be, overlap);
    Timing best;
    for (int r = 0; r <= repeat; ++r) {  // the first run warms up (buffers, pages)
      comms.cp->barrier();
      const double w0 = hooks.wait_seconds(), t0 = now();
      hooks.context_attention_forward({HookSite::Attention, 0}, out.data(), lse.data(), qkv.data(), B, Tl, NH, NH, HS,
                                      0.0f, 1, 0, {});
      hooks.context_attention_backward({HookSite::Attention, 0}, dqkv.data(), dout.data(), qkv.data(), out.data(),
                                       lse.data(), B, Tl, NH, NH, HS, 0.0f, 1, 0, {});
      double t[2] = {now() - t0, hooks.wait_seconds() - w0};
      comms.cp->all_reduce(t, 2, ElemType::F64, ReduceOp::Max);  // the slowest rank sets the step
      if (r > 0 && t[0] < best.wall) best = {t[0], t[1]};
    }
    return best;
  };
  const Timing plain = run(false), over = run(true);
  if (mpi.rank() == 0) {
    const double hidden = plain.exchange > 0 ? 1.0 - over.exchange / plain.exchange : 0.0;
    std::printf("| %d | %d | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.0f%% |\n", cp, T, NH, HS, B, 1e3 * plain.wall,
                1e3 * plain.exchange, 1e3 * over.wall, 1e3 * over.exchange, 100.0 * hidden);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::parallel::run_mpi_main("bench_cp_overlap", body, argc, argv); }
