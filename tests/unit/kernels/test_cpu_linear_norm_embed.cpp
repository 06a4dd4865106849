// CPU twins of matmul, LayerNorm/RMSNorm and embedding: forward against naive double-precision
// references, backward by finite differences, and the += / = conventions of kernels/backend.h.
#include <cmath>

#include "kernels/backend.h"
#include "kernel_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

TEST_CASE("matmul forward matches a naive product, with and without bias, across row and column splits") {
  auto be = cpu_backend();
  for (auto [N, IC, OC] : {std::tuple{5, 7, 3}, std::tuple{515, 260, 131}, std::tuple{40, 128, 1000}}) {
    auto x = randn(static_cast<std::size_t>(N) * IC, 1), w = randn(static_cast<std::size_t>(OC) * IC, 2),
         b = randn(OC, 3);
    for (bool with_bias : {false, true}) {
      std::vector<float> out(static_cast<std::size_t>(N) * OC, 99.0f), ref(out.size());
      be->matmul_forward(out.data(), x.data(), w.data(), with_bias ? b.data() : nullptr, N, IC, OC);
      for (int i = 0; i < N; ++i)
        for (int o = 0; o < OC; ++o) {
          double s = with_bias ? b[o] : 0.0;
          for (int k = 0; k < IC; ++k) s += static_cast<double>(x[i * IC + k]) * w[o * IC + k];
          ref[i * OC + o] = static_cast<float>(s);
        }
      REQUIRE(rel_err(out, ref) < 1e-5);
    }
  }
}

TEST_CASE("matmul backward: finite differences, accumulation of dweight/dbias, dinp = or +=") {
  auto be = cpu_backend();
  const int N = 6, IC = 5, OC = 4;
  auto x = randn(N * IC, 11), w = randn(OC * IC, 12), b = randn(OC, 13), r = randn(N * OC, 14);
  auto loss = [&] {
    std::vector<float> out(N * OC);
    be->matmul_forward(out.data(), x.data(), w.data(), b.data(), N, IC, OC);
    return dot(out, r);
  };
  std::vector<float> dx(N * IC, 123.0f), dw(OC * IC, 0.0f), db(OC, 0.0f);
  be->matmul_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), N, IC, OC, false);
  check_gradient("dinp", loss, x, dx);
  check_gradient("dweight", loss, w, dw);
  check_gradient("dbias", loss, b, db);
  // second call: parameter grads double, dinp accumulates only when asked
  auto dx1 = dx, dw1 = dw, db1 = db;
  be->matmul_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), N, IC, OC, true);
  for (std::size_t i = 0; i < dw.size(); ++i) REQUIRE(dw[i] == Approx(2 * dw1[i]).margin(1e-6));
  for (std::size_t i = 0; i < db.size(); ++i) REQUIRE(db[i] == Approx(2 * db1[i]).margin(1e-6));
  for (std::size_t i = 0; i < dx.size(); ++i) REQUIRE(dx[i] == Approx(2 * dx1[i]).margin(1e-6));
  be->matmul_backward(dx.data(), nullptr, nullptr, r.data(), x.data(), w.data(), N, IC, OC, false);
  for (std::size_t i = 0; i < dx.size(); ++i) REQUIRE(dx[i] == Approx(dx1[i]).margin(1e-6));
}

TEST_CASE("matmul backward on threaded shapes matches naive sums") {
  auto be = cpu_backend();
  for (auto [N, IC, OC] : {std::tuple{300, 96, 200}, std::tuple{40, 1400, 90}}) {
    auto x = randn(N * IC, 21), w = randn(OC * IC, 22), d = randn(N * OC, 23);
    std::vector<float> dx(N * IC), dw(OC * IC, 0.5f), db(OC, 0.25f), rdx(N * IC), rdw(OC * IC), rdb(OC);
    be->matmul_backward(dx.data(), dw.data(), db.data(), d.data(), x.data(), w.data(), N, IC, OC, false);
    for (int i = 0; i < N; ++i)
      for (int k = 0; k < IC; ++k) {
        double s = 0;
        for (int o = 0; o < OC; ++o) s += static_cast<double>(d[i * OC + o]) * w[o * IC + k];
        rdx[i * IC + k] = static_cast<float>(s);
      }
    for (int o = 0; o < OC; ++o) {
      double sb = 0.25;
      for (int i = 0; i < N; ++i) sb += d[i * OC + o];
      rdb[o] = static_cast<float>(sb);
      for (int k = 0; k < IC; ++k) {
        double s = 0.5;
        for (int i = 0; i < N; ++i) s += static_cast<double>(d[i * OC + o]) * x[i * IC + k];
        rdw[o * IC + k] = static_cast<float>(s);
      }
    }
    REQUIRE(rel_err(dx, rdx) < 1e-5);
    REQUIRE(rel_err(dw, rdw) < 1e-5);
    REQUIRE(rel_err(db, rdb) < 1e-5);
  }
}

TEST_CASE("layernorm forward matches a double reference, backward by finite differences") {
  auto be = cpu_backend();
  const int N = 7, C = 37;
  auto x = randn(N * C, 31, 2.0f), w = randn(C, 32), b = randn(C, 33), r = randn(N * C, 34);
  for (int i = 0; i < N * C; ++i) x[i] += 3.0f;  // an offset: the mean matters
  std::vector<float> out(N * C), mean(N), rstd(N);
  be->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5f);
  std::vector<float> ref(N * C);
  for (int i = 0; i < N; ++i) {
    double m = 0, v = 0;
    for (int c = 0; c < C; ++c) m += x[i * C + c];
    m /= C;
    for (int c = 0; c < C; ++c) v += (x[i * C + c] - m) * (x[i * C + c] - m);
    v /= C;
    const double s = 1.0 / std::sqrt(v + 1e-5);
    REQUIRE(mean[i] == Approx(m).epsilon(1e-6));
    REQUIRE(rstd[i] == Approx(s).epsilon(1e-5));
    for (int c = 0; c < C; ++c) ref[i * C + c] = static_cast<float>((x[i * C + c] - m) * s * w[c] + b[c]);
  }
  REQUIRE(rel_err(out, ref) < 1e-5);

  auto loss = [&] {
    std::vector<float> o(N * C), m(N), s(N);
    be->layernorm_forward(o.data(), m.data(), s.data(), x.data(), w.data(), b.data(), N, C, 1e-5f);
    return dot(o, r);
  };
  std::vector<float> dx(N * C, 0.0f), dw(C, 0.0f), db(C, 0.0f);
  be->layernorm_backward(dx.data(), dw.data(), db.data(), r.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
  check_gradient("layernorm dinp", loss, x, dx);
  check_gradient("layernorm dweight", loss, w, dw);
  check_gradient("layernorm dbias", loss, b, db);
  // dinp accumulates
  auto dx2 = dx;
  be->layernorm_backward(dx2.data(), dw.data(), nullptr, r.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
  for (int i = 0; i < N * C; ++i) REQUIRE(dx2[i] == Approx(2 * dx[i]).margin(1e-6));
}

TEST_CASE("layernorm without bias and on a threaded shape") {
  auto be = cpu_backend();
  const int N = 256, C = 768;
  auto x = randn(N * C, 41), w = randn(C, 42), d = randn(N * C, 43);
  std::vector<float> out(N * C), mean(N), rstd(N), dx(N * C, 0.0f), dw(C, 0.0f);
  be->layernorm_forward(out.data(), mean.data(), rstd.data(), x.data(), w.data(), nullptr, N, C, 1e-5f);
  be->layernorm_backward(dx.data(), dw.data(), nullptr, d.data(), x.data(), w.data(), mean.data(), rstd.data(), N, C);
  std::vector<float> rdw(C, 0.0f);
  for (int c = 0; c < C; ++c) {
    double s = 0;
    for (int i = 0; i < N; ++i) s += d[i * C + c] * (x[i * C + c] - mean[i]) * static_cast<double>(rstd[i]);
    rdw[c] = static_cast<float>(s);
  }
  REQUIRE(rel_err(dw, rdw) < 1e-5);
  // each row's input gradient is orthogonal to 1 and to xhat (the two directions LayerNorm removes)
  for (int i = 0; i < N; i += 17) {
    double s1 = 0, sx = 0, n = 0;
    for (int c = 0; c < C; ++c) {
      s1 += dx[i * C + c];
      sx += dx[i * C + c] * (x[i * C + c] - mean[i]) * rstd[i];
      n += std::fabs(dx[i * C + c]);
    }
    REQUIRE(std::fabs(s1) < 1e-4 * n);
    REQUIRE(std::fabs(sx) < 1e-4 * n);
  }
}

TEST_CASE("rmsnorm forward matches a double reference, backward by finite differences") {
  auto be = cpu_backend();
  const int N = 5, C = 29;
  auto x = randn(N * C, 51, 1.5f), w = randn(C, 52), r = randn(N * C, 53);
  for (float& v : x) v += 0.7f;
  std::vector<float> out(N * C), rstd(N), ref(N * C);
  be->rmsnorm_forward(out.data(), rstd.data(), x.data(), w.data(), N, C, 1e-6f);
  for (int i = 0; i < N; ++i) {
    double ms = 0;
    for (int c = 0; c < C; ++c) ms += static_cast<double>(x[i * C + c]) * x[i * C + c];
    const double s = 1.0 / std::sqrt(ms / C + 1e-6);
    REQUIRE(rstd[i] == Approx(s).epsilon(1e-5));
    for (int c = 0; c < C; ++c) ref[i * C + c] = static_cast<float>(x[i * C + c] * s * w[c]);
  }
  REQUIRE(rel_err(out, ref) < 1e-5);
  auto loss = [&] {
    std::vector<float> o(N * C), s(N);
    be->rmsnorm_forward(o.data(), s.data(), x.data(), w.data(), N, C, 1e-6f);
    return dot(o, r);
  };
  std::vector<float> dx(N * C, 0.0f), dw(C, 0.0f);
  be->rmsnorm_backward(dx.data(), dw.data(), r.data(), x.data(), w.data(), rstd.data(), N, C);
  check_gradient("rmsnorm dinp", loss, x, dx);
  check_gradient("rmsnorm dweight", loss, w, dw);
}

TEST_CASE("embedding forward gathers rows of a vocab shard, backward accumulates repeated tokens") {
  auto be = cpu_backend();
  const int N = 9, C = 6, P = 5, V_local = 4, vocab_start = 3;
  const std::vector<int32_t> tok = {3, 4, 6, 2, 3, 7, 5, 3, 6};  // 2 and 7 are outside [3, 7)
  const std::vector<int32_t> pos = {0, 1, 2, 3, 4, 0, 1, 2, 3};
  auto wte = randn(V_local * C, 61), wpe = randn(P * C, 62), r = randn(N * C, 63);
  std::vector<float> out(N * C);
  be->embedding_forward(out.data(), tok.data(), pos.data(), wte.data(), wpe.data(), N, C, vocab_start, V_local);
  for (int i = 0; i < N; ++i)
    for (int c = 0; c < C; ++c) {
      const int l = tok[i] - vocab_start;
      const float e = (l >= 0 && l < V_local ? wte[l * C + c] : 0.0f) + wpe[pos[i] * C + c];
      REQUIRE(out[i * C + c] == e);
    }
  be->embedding_forward(out.data(), tok.data(), pos.data(), wte.data(), nullptr, N, C, vocab_start, V_local);
  REQUIRE(out[0] == wte[0]);
  REQUIRE(out[3 * C] == 0.0f);

  auto loss = [&] {
    std::vector<float> o(N * C);
    be->embedding_forward(o.data(), tok.data(), pos.data(), wte.data(), wpe.data(), N, C, vocab_start, V_local);
    return dot(o, r);
  };
  std::vector<float> dwte(V_local * C, 0.0f), dwpe(P * C, 0.0f);
  be->embedding_backward(dwte.data(), dwpe.data(), r.data(), tok.data(), pos.data(), N, C, vocab_start, V_local);
  check_gradient("dwte", loss, wte, dwte, 1000);
  check_gradient("dwpe", loss, wpe, dwpe, 1000);
  auto dwte1 = dwte;
  be->embedding_backward(dwte.data(), nullptr, r.data(), tok.data(), pos.data(), N, C, vocab_start, V_local);
  for (std::size_t i = 0; i < dwte.size(); ++i) REQUIRE(dwte[i] == Approx(2 * dwte1[i]));
}
