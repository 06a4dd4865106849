// Context-parallel attention blocks (attention_kv_pack, attention_block_forward/backward): the sequence
// split in 2*cp chunks (rank r holds chunks r and 2cp-1-r), every rank's queries run against every rank's
// K/V block and merge by log-sum-exp; the result equals attention_forward over the whole sequence (out,
// lse, dropout included), the blocks' dQ/dK/dV summed over ranks equal attention_backward's, and the
// block backward matches finite differences of the block forward.
#include <cmath>

#include "kernels/attention/attention_block_math.h"
#include "kernels/backend.h"
#include "kernel_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

namespace {

struct CpCase {
  int B, T, NH, NKV, HS, cp;
  int W() const { return (NH + 2 * NKV) * HS; }
  int chunk() const { return T / (2 * cp); }
  int Tl() const { return T / cp; }
};

// Rank r's rows of a (B, T, width) tensor in its local order, or back (to_local false: scatter local into full).
void cp_rows(std::vector<float>& local, std::vector<float>& full, const CpCase& s, int width, int r, bool to_local) {
  for (int b = 0; b < s.B; ++b)
    for (int i = 0; i < s.Tl(); ++i) {
      const int t = cp_global_position(i, s.chunk(), s.cp, r);
      float* l = local.data() + (std::size_t(b) * s.Tl() + i) * width;
      float* f = full.data() + (std::size_t(b) * s.T + t) * width;
      for (int c = 0; c < width; ++c) (to_local ? l[c] : f[c]) = to_local ? f[c] : l[c];
    }
}
// Rank r's lse (B, NH, Tl) <-> the full (B, NH, T).
void cp_lse(std::vector<float>& local, std::vector<float>& full, const CpCase& s, int r, bool to_local) {
  for (int bh = 0; bh < s.B * s.NH; ++bh)
    for (int i = 0; i < s.Tl(); ++i) {
      float& l = local[std::size_t(bh) * s.Tl() + i];
      float& f = full[std::size_t(bh) * s.T + cp_global_position(i, s.chunk(), s.cp, r)];
      if (to_local)
        l = f;
      else
        f = l;
    }
}

struct CpResult {
  std::vector<float> out, lse;  // full layout
  std::vector<std::vector<float>> out_local, lse_local, qkv_local;
};

// Every rank's forward over the ring: its own block first, then ranks r-1, r-2, ... (the order the ring
// delivers them).
CpResult cp_forward(Backend& be, std::vector<float>& qkv, const CpCase& s, float p) {
  const int N = s.B * s.Tl();
  CpResult res;
  res.out.assign(std::size_t(s.B) * s.T * s.NH * s.HS, 0.0f);
  res.lse.assign(std::size_t(s.B) * s.NH * s.T, 0.0f);
  std::vector<std::vector<float>> kv(s.cp);
  res.qkv_local.assign(s.cp, std::vector<float>(std::size_t(N) * s.W()));
  for (int r = 0; r < s.cp; ++r) {
    cp_rows(res.qkv_local[r], qkv, s, s.W(), r, true);
    kv[r].resize(std::size_t(N) * 2 * s.NKV * s.HS);
    be.attention_kv_pack(kv[r].data(), res.qkv_local[r].data(), N, s.NH, s.NKV, s.HS);
  }
  for (int r = 0; r < s.cp; ++r) {
    std::vector<float> o(std::size_t(N) * s.NH * s.HS), l(std::size_t(s.B) * s.NH * s.Tl());
    for (int step = 0; step < s.cp; ++step) {
      const int j = (r - step + s.cp) % s.cp;
      be.attention_block_forward(o.data(), l.data(), res.qkv_local[r].data(), kv[j].data(), s.B, s.NH, s.NKV, s.HS,
                                 {s.chunk(), s.cp, r, j}, step == 0, p, 11, 500, {});
    }
    cp_rows(o, res.out, s, s.NH * s.HS, r, false);
    cp_lse(l, res.lse, s, r, false);
    res.out_local.push_back(o);
    res.lse_local.push_back(l);
  }
  return res;
}

// The blocks' backward summed over ranks, in the full qkv layout.
std::vector<float> cp_backward(Backend& be, CpResult& f, std::vector<float>& dout, const CpCase& s, float p) {
  const int N = s.B * s.Tl(), QW = s.NH * s.HS, KW = 2 * s.NKV * s.HS;
  std::vector<std::vector<float>> kv(s.cp, std::vector<float>(std::size_t(N) * KW)), dkv = kv, dq(s.cp);
  for (int r = 0; r < s.cp; ++r) be.attention_kv_pack(kv[r].data(), f.qkv_local[r].data(), N, s.NH, s.NKV, s.HS);
  for (auto& d : dkv) std::fill(d.begin(), d.end(), 0.0f);
  std::vector<float> dqkv(std::size_t(s.B) * s.T * s.W());
  for (int r = 0; r < s.cp; ++r) {
    std::vector<float> dout_local(std::size_t(N) * QW);
    cp_rows(dout_local, dout, s, QW, r, true);
    dq[r].assign(std::size_t(N) * QW, 0.0f);
    for (int j = 0; j < s.cp; ++j)
      be.attention_block_backward(dq[r].data(), dkv[j].data(), dout_local.data(), f.qkv_local[r].data(), kv[j].data(),
                                  f.out_local[r].data(), f.lse_local[r].data(), s.B, s.NH, s.NKV, s.HS,
                                  {s.chunk(), s.cp, r, j}, p, 11, 500, {});
  }
  for (int r = 0; r < s.cp; ++r) {
    std::vector<float> local(std::size_t(N) * s.W());
    for (int n = 0; n < N; ++n)
      for (int c = 0; c < s.W(); ++c)
        local[std::size_t(n) * s.W() + c] =
            c < QW ? dq[r][std::size_t(n) * QW + c] : dkv[r][std::size_t(n) * KW + c - QW];
    cp_rows(local, dqkv, s, s.W(), r, false);
  }
  return dqkv;
}

}  // namespace

TEST_CASE("attention over context-parallel blocks merged by log-sum-exp equals full attention (GQA, dropout)") {
  auto be = make_backend("cpu", DType::F32);
  for (const CpCase s :
       {CpCase{2, 16, 4, 2, 8, 2}, CpCase{1, 24, 2, 2, 4, 3}, CpCase{2, 8, 2, 1, 4, 1}, CpCase{1, 40, 3, 1, 8, 4}})
    for (float p : {0.0f, 0.2f}) {
      INFO("T=" << s.T << " cp=" << s.cp << " p=" << p);
      auto qkv = randn(std::size_t(s.B) * s.T * s.W(), 91);
      std::vector<float> out(std::size_t(s.B) * s.T * s.NH * s.HS), lse(std::size_t(s.B) * s.NH * s.T);
      be->attention_forward(out.data(), lse.data(), qkv.data(), nullptr, s.B, s.T, s.NH, s.NKV, s.HS, p, 11, 500);
      CpResult f = cp_forward(*be, qkv, s, p);
      REQUIRE(rel_err(f.out, out) < 2e-6);
      REQUIRE(max_abs_diff(f.lse, lse) < 2e-5);
      auto dout = randn(out.size(), 92);
      std::vector<float> dqkv(qkv.size());
      be->attention_backward(dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), nullptr, s.B, s.T, s.NH,
                             s.NKV, s.HS, p, 11, 500);
      REQUIRE(rel_err(cp_backward(*be, f, dout, s, p), dqkv) < 1e-5);
    }
}

TEST_CASE("context-parallel attention block backward matches finite differences (GQA, dropout)") {
  auto be = make_backend("cpu", DType::F32);
  const CpCase s{1, 12, 2, 1, 4, 3};
  for (float p : {0.0f, 0.25f}) {
    INFO("p=" << p);
    auto qkv = randn(std::size_t(s.B) * s.T * s.W(), 93);
    auto r = randn(std::size_t(s.B) * s.T * s.NH * s.HS, 94);
    CpResult f = cp_forward(*be, qkv, s, p);
    auto dqkv = cp_backward(*be, f, r, s, p);
    auto loss = [&] { return dot(cp_forward(*be, qkv, s, p).out, r); };
    check_gradient("dqkv", loss, qkv, dqkv, 120);
  }
}

TEST_CASE("attention blocks reject a rank outside the context-parallel group") {
  auto be = make_backend("cpu", DType::F32);
  std::vector<float> buf(64), lse(64);
  REQUIRE_THROWS_WITH(be->attention_block_forward(buf.data(), lse.data(), buf.data(), buf.data(), 1, 1, 1, 2,
                                                  {2, 2, 0, 2}, true, 0.0f, 0, 0, {}),
                      Catch::Contains("attention_block_forward: block chunk=2 cp=2 q_rank=0 kv_rank=2"));
}
