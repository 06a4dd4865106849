// The CPU twins give the same bits whatever the OpenMP thread count (reductions split by output column,
// GEMMs split by rows, fixed-size chunks for the fp64 sum of squares) and from run to run.
#include <omp.h>

#include "kernels/backend.h"
#include "kernel_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

namespace {

// Runs the backward passes of several ops and returns all outputs concatenated.
std::vector<float> run_ops(Backend& be) {
  const int N = 192, C = 384, OC = 160;  // sizes above the per-thread grains, so 2 threads really split
  auto x = randn(N * C, 201), w = randn(OC * C, 202), d = randn(N * OC, 203), lw = randn(C, 204);
  std::vector<float> all;
  auto append = [&](const std::vector<float>& v) { all.insert(all.end(), v.begin(), v.end()); };
  std::vector<float> out(N * OC), dx(N * C), dw(OC * C, 0.0f), db(OC, 0.0f);
  be.matmul_forward(out.data(), x.data(), w.data(), nullptr, N, C, OC);
  be.matmul_backward(dx.data(), dw.data(), db.data(), d.data(), x.data(), w.data(), N, C, OC, false);
  append(out), append(dx), append(dw), append(db);
  std::vector<float> y(N * C), mean(N), rstd(N), ldx(N * C, 0.0f), ldw(C, 0.0f), ldb(C, 0.0f);
  be.layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), lw.data(), lw.data(), N, C, 1e-5f);
  be.layernorm_backward(ldx.data(), ldw.data(), ldb.data(), x.data(), x.data(), lw.data(), mean.data(), rstd.data(), N,
                        C);
  append(y), append(ldx), append(ldw), append(ldb);
  const int B = 2, T = 128, NH = 4, HS = 16;
  auto qkv = randn(static_cast<std::size_t>(B) * T * 3 * NH * HS, 205), dout = randn(B * T * NH * HS, 206);
  std::vector<float> ao(B * T * NH * HS), lse(B * NH * T), dqkv(qkv.size());
  be.attention_forward(ao.data(), lse.data(), qkv.data(), nullptr, B, T, NH, NH, HS, 0.1f, 3, 0);
  be.attention_backward(dqkv.data(), dout.data(), qkv.data(), ao.data(), lse.data(), nullptr, B, T, NH, NH, HS, 0.1f, 3,
                        0);
  append(ao), append(lse), append(dqkv);
  std::vector<int32_t> tok(N), pos(N);
  for (int i = 0; i < N; ++i) tok[i] = (i * 7) % 13, pos[i] = i % 50;
  std::vector<float> dwte(13 * C, 0.0f), dwpe(50 * C, 0.0f);
  be.embedding_backward(dwte.data(), dwpe.data(), x.data(), tok.data(), pos.data(), N, C, 0, 13);
  append(dwte), append(dwpe);
  auto big = randn(1 << 18, 207);
  all.push_back(static_cast<float>(be.sum_squares(big.data(), big.size())));
  return all;
}

}  // namespace

TEST_CASE("CPU ops are bitwise identical on 1 and 2 threads and across runs") {
  auto be = make_backend("cpu", DType::F32);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = run_ops(*be);
  omp_set_num_threads(2);
  const auto two = run_ops(*be);
  const auto again = run_ops(*be);
  omp_set_num_threads(saved);
  REQUIRE(one.size() == two.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < one.size(); ++i) differ += one[i] != two[i];
  INFO(differ << " of " << one.size() << " values differ between 1 and 2 threads");
  REQUIRE(differ == 0);
  REQUIRE(two == again);
}
