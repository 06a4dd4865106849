// mpi_comm_check: every collective of the MPI communicator against the serial result, computed by
// each rank from every rank's (regenerated) inputs. Deterministic mode must match the in-order serial
// sum bitwise; the default (MPI's own reduction order) within 1e-6 relative. bf16 reductions (blocking
// and non-blocking): deterministic mode bitwise the in-order sum rounded to bf16 after every rank's
// term, the default within (ranks - 1) bf16 roundings of the exact sum, and bitwise with two ranks (a
// single rounding whatever the order); bf16 max bitwise always. Runs over the world and
// over the TP/DP/PP groups of a TP 2 (x PP 2 when 4+ ranks) grid and the expert groups of an EP 2 grid;
// batched point-to-point transfers deliver in issue order; all_to_all_v with uneven and empty blocks. Exit 0 = all
// checks passed.
#include "core/common/error.h"
#include "core/common/log.h"
#include "kernels/common/dtype_math.h"
#include "parallel/comm/grid_comms.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/launch/mpi_runtime.h"

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace {
using namespace gptrain;
using namespace gptrain::parallel;

std::vector<float> data_of(int world_rank, std::size_t n, int salt) {
  std::mt19937 rng(1000 * world_rank + salt);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng) * std::pow(10.0f, static_cast<float>(world_rank % 3));  // mixed magnitudes
  return v;
}

int failures = 0;
void expect(bool ok, const std::string& what) {
  if (!ok) {
    ++failures;
    log::error("FAILED: {}", what);
  }
}

bool close(float a, float b, bool exact) {
  if (exact) return std::memcmp(&a, &b, sizeof a) == 0;
  return std::fabs(a - b) <= 1e-6f * std::max(1.0f, std::fabs(b));
}

void check_group(Communicator& c, bool det, int salt) {
  const int n = c.size(), me = c.rank();
  const auto& wr = c.world_ranks();
  const std::string tag = fmt::format("{}{}", c.name(), det ? " (deterministic)" : "");
  for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    // all_reduce sum / max against the in-order serial reduction.
    std::vector<float> serial = data_of(wr[0], count, salt), mx = serial;
    for (int r = 1; r < n; ++r) {
      std::vector<float> d = data_of(wr[r], count, salt);
      for (std::size_t i = 0; i < count; ++i) {
        serial[i] += d[i];
        mx[i] = std::max(mx[i], d[i]);
      }
    }
    std::vector<float> buf = data_of(wr[me], count, salt);
    c.all_reduce(buf.data(), count, ElemType::F32, ReduceOp::Sum);
    bool ok = true;
    for (std::size_t i = 0; i < count; ++i) ok = ok && close(buf[i], serial[i], det);
    expect(ok, fmt::format("all_reduce sum f32 n={} on {}", count, tag));
    buf = data_of(wr[me], count, salt);
    c.all_reduce(buf.data(), count, ElemType::F32, ReduceOp::Max);
    expect(buf == mx, fmt::format("all_reduce max n={} on {}", count, tag));

    // Integers: exact either way.
    std::vector<int64_t> iv(count, wr[me] + 1);
    c.all_reduce(iv.data(), count, ElemType::I64, ReduceOp::Sum);
    int64_t want = 0;
    for (int r : wr) want += r + 1;
    expect(iv[count - 1] == want, fmt::format("all_reduce i64 on {}", tag));

    // reduce_scatter: my block of the serial sum of everyone's (n * count) inputs.
    std::vector<float> full_serial = data_of(wr[0], count * n, salt + 1);
    for (int r = 1; r < n; ++r) {
      std::vector<float> d = data_of(wr[r], count * n, salt + 1);
      for (std::size_t i = 0; i < d.size(); ++i) full_serial[i] += d[i];
    }
    std::vector<float> mine = data_of(wr[me], count * n, salt + 1), block(count);
    c.reduce_scatter(block.data(), mine.data(), count, ElemType::F32, ReduceOp::Sum);
    ok = true;
    for (std::size_t i = 0; i < count; ++i) ok = ok && close(block[i], full_serial[me * count + i], det);
    expect(ok, fmt::format("reduce_scatter n={} on {}", count, tag));

    // all_gather, with the send buffer aliasing the receive block (the distributed optimizer's use).
    std::vector<float> gathered(count * n, -7.0f);
    std::vector<float> part = data_of(wr[me], count, salt + 2);
    std::memcpy(gathered.data() + me * count, part.data(), count * sizeof(float));
    c.all_gather(gathered.data(), gathered.data() + me * count, count, ElemType::F32);
    ok = true;
    for (int r = 0; r < n; ++r) {
      std::vector<float> d = data_of(wr[r], count, salt + 2);
      ok = ok && std::memcmp(d.data(), gathered.data() + r * count, count * sizeof(float)) == 0;
    }
    expect(ok, fmt::format("all_gather n={} on {}", count, tag));

    // broadcast from the last group rank.
    buf = data_of(wr[me], count, salt + 3);
    c.broadcast(buf.data(), count, ElemType::F32, n - 1);
    expect(buf == data_of(wr[n - 1], count, salt + 3), fmt::format("broadcast n={} on {}", count, tag));

    // all_to_all: block j of rank i's input goes to rank j's block i.
    std::vector<float> a2a_in = data_of(wr[me], count * n, salt + 4), a2a_out(count * n);
    c.all_to_all(a2a_out.data(), a2a_in.data(), count, ElemType::F32);
    ok = true;
    for (int r = 0; r < n; ++r) {
      std::vector<float> d = data_of(wr[r], count * n, salt + 4);
      ok = ok && std::memcmp(d.data() + me * count, a2a_out.data() + r * count, count * sizeof(float)) == 0;
    }
    expect(ok, fmt::format("all_to_all n={} on {}", count, tag));

    // all_to_all_v: rank i sends rank j a block of a2av_count(i, j) elements (some empty); what arrives
    // from rank i is what rank i generated for me.
    auto a2av_count = [&](int from, int to) { return (count * static_cast<std::size_t>(1 + from + 2 * to)) % 5 * 3; };
    std::vector<std::size_t> sc(n), rc(n);
    std::vector<float> v_in, v_out, v_want;
    for (int r = 0; r < n; ++r) {
      sc[r] = a2av_count(me, r);
      rc[r] = a2av_count(r, me);
      std::vector<float> d = data_of(wr[me], sc[r], salt + 20 + r);
      v_in.insert(v_in.end(), d.begin(), d.end());
      std::vector<float> w = data_of(wr[r], rc[r], salt + 20 + me);
      v_want.insert(v_want.end(), w.begin(), w.end());
    }
    v_out.assign(v_want.size(), -7.0f);
    c.all_to_all_v(v_out.data(), rc, v_in.data(), sc, ElemType::F32);
    expect(v_out == v_want, fmt::format("all_to_all_v n={} on {}", count, tag));

    if (n > 1) {
      // Ring shift with send_recv, then the same with plain send/recv ordered to avoid deadlock.
      const int next = (me + 1) % n, prev = (me + n - 1) % n;
      std::vector<float> out = data_of(wr[me], count, salt + 5), in(count);
      c.send_recv(out.data(), count, next, in.data(), count, prev, ElemType::F32);
      expect(in == data_of(wr[prev], count, salt + 5), fmt::format("send_recv n={} on {}", count, tag));
      if (me == 0) {
        c.send(out.data(), count, ElemType::F32, 1);
      } else if (me == 1) {
        c.recv(in.data(), count, ElemType::F32, 0);
        expect(in == data_of(wr[0], count, salt + 5), fmt::format("send/recv n={} on {}", count, tag));
      }
      // Batched transfers (pipeline steps): forward to next and backward to prev in one batch (the
      // same peer both ways when n == 2: matched in issue order, no tags), then two batches in a row.
      std::vector<float> fwd = data_of(wr[me], count, salt + 6), bwd = data_of(wr[me], count, salt + 7);
      std::vector<float> got_f(count), got_b(count);
      c.batch_send_recv({P2POp::send_to(fwd.data(), count, next), P2POp::send_to(bwd.data(), count, prev),
                         P2POp::recv_from(got_f.data(), count, prev), P2POp::recv_from(got_b.data(), count, next)},
                        ElemType::F32);
      expect(got_f == data_of(wr[prev], count, salt + 6) && got_b == data_of(wr[next], count, salt + 7),
             fmt::format("batch_send_recv both directions n={} on {}", count, tag));
      for (int k : {8, 9}) {
        std::vector<float> o = data_of(wr[me], count, salt + k), i(count);
        c.batch_send_recv({P2POp::send_to(o.data(), count, next), P2POp::recv_from(i.data(), count, prev)},
                          ElemType::F32);
        expect(i == data_of(wr[prev], count, salt + k), fmt::format("batch_send_recv in order n={} on {}", count, tag));
      }
    }
    c.barrier();
  }
}

// The non-blocking collectives, several in flight at once (as gradient buckets are): three
// all-reduces, a reduce-scatter and an all-gather started back to back, completed by polling test()
// in reverse order, then checked as above (deterministic mode: bitwise the in-order serial sum).
void check_nonblocking(Communicator& c, bool det, int salt) {
  const int n = c.size(), me = c.rank();
  const auto& wr = c.world_ranks();
  const std::string tag = fmt::format("{}{}", c.name(), det ? " (deterministic)" : "");
  const std::vector<std::size_t> counts = {1, 7, 1001};
  std::vector<std::vector<float>> bufs, serial;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    bufs.push_back(data_of(wr[me], counts[k], salt + int(k)));
    std::vector<float> s = data_of(wr[0], counts[k], salt + int(k));
    for (int r = 1; r < n; ++r) {
      std::vector<float> d = data_of(wr[r], counts[k], salt + int(k));
      for (std::size_t i = 0; i < s.size(); ++i) s[i] += d[i];
    }
    serial.push_back(s);
  }
  const std::size_t bc = 5;  // reduce-scatter block
  std::vector<float> rs_in = data_of(wr[me], bc * n, salt + 10), rs_out(bc, -1.0f);
  std::vector<float> rs_serial = data_of(wr[0], bc * n, salt + 10);
  for (int r = 1; r < n; ++r) {
    std::vector<float> d = data_of(wr[r], bc * n, salt + 10);
    for (std::size_t i = 0; i < d.size(); ++i) rs_serial[i] += d[i];
  }
  std::vector<float> ag(bc * n, -7.0f), part = data_of(wr[me], bc, salt + 11);
  std::memcpy(ag.data() + me * bc, part.data(), bc * sizeof(float));

  std::vector<std::unique_ptr<PendingCollective>> pending;
  for (std::size_t k = 0; k < counts.size(); ++k)
    pending.push_back(c.iall_reduce(bufs[k].data(), counts[k], ElemType::F32, ReduceOp::Sum));
  pending.push_back(c.ireduce_scatter(rs_out.data(), rs_in.data(), bc, ElemType::F32, ReduceOp::Sum));
  pending.push_back(c.iall_gather(ag.data(), ag.data() + me * bc, bc, ElemType::F32));
  for (bool all = false; !all;) {
    all = true;
    for (auto it = pending.rbegin(); it != pending.rend(); ++it) all = (*it)->test() && all;
  }
  for (auto& p : pending) p->wait();  // done already: returns at once

  for (std::size_t k = 0; k < counts.size(); ++k) {
    bool ok = true;
    for (std::size_t i = 0; i < counts[k]; ++i) ok = ok && close(bufs[k][i], serial[k][i], det);
    expect(ok, fmt::format("iall_reduce n={} on {}", counts[k], tag));
  }
  bool ok = true;
  for (std::size_t i = 0; i < bc; ++i) ok = ok && close(rs_out[i], rs_serial[me * bc + i], det);
  expect(ok, fmt::format("ireduce_scatter on {}", tag));
  ok = true;
  for (int r = 0; r < n; ++r) {
    std::vector<float> d = data_of(wr[r], bc, salt + 11);
    ok = ok && std::memcmp(d.data(), ag.data() + r * bc, bc * sizeof(float)) == 0;
  }
  expect(ok, fmt::format("iall_gather on {}", tag));
  c.barrier();
}

std::vector<uint16_t> bf16_data_of(int world_rank, std::size_t n, int salt) {
  std::vector<uint16_t> v;
  for (float x : data_of(world_rank, n, salt)) v.push_back(f32_to_bf16(x));
  return v;
}

// got vs the in-order bf16 sum `serial` of the ranks' values (exact: their fp64 sum, abs_sum: sum of |x|).
bool bf16_sum_ok(uint16_t got, uint16_t serial, double exact, double abs_sum, int n, bool bitwise) {
  if (bitwise) return got == serial;
  return std::fabs(double(bf16_to_f32(got)) - exact) <= double(n - 1) * std::ldexp(abs_sum, -8) + 1e-30;
}

void check_bf16(Communicator& c, bool det, int salt) {
  const int n = c.size(), me = c.rank();
  const auto& wr = c.world_ranks();
  const std::string tag = fmt::format("{}{}", c.name(), det ? " (deterministic)" : "");
  const bool bitwise = det || n <= 2;
  for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{1001}}) {
    const std::size_t total = count * std::size_t(n);  // reduce-scatter input: n blocks of count
    std::vector<uint16_t> serial = bf16_data_of(wr[0], total, salt), mx = serial;
    std::vector<double> exact(total), abs_sum(total);
    for (int r = 0; r < n; ++r) {
      const std::vector<uint16_t> d = bf16_data_of(wr[r], total, salt);
      for (std::size_t i = 0; i < total; ++i) {
        if (r > 0) {
          serial[i] = bf16_add(serial[i], d[i]);
          mx[i] = bf16_max(mx[i], d[i]);
        }
        exact[i] += bf16_to_f32(d[i]);
        abs_sum[i] += std::fabs(bf16_to_f32(d[i]));
      }
    }
    const std::vector<uint16_t> mine = bf16_data_of(wr[me], total, salt);
    std::vector<uint16_t> ar(mine.begin(), mine.begin() + count), amx = ar, iar = ar;
    c.all_reduce(ar.data(), count, ElemType::BF16, ReduceOp::Sum);
    c.all_reduce(amx.data(), count, ElemType::BF16, ReduceOp::Max);
    std::vector<uint16_t> rs(count), irs(count);
    c.reduce_scatter(rs.data(), mine.data(), count, ElemType::BF16, ReduceOp::Sum);
    auto p1 = c.iall_reduce(iar.data(), count, ElemType::BF16, ReduceOp::Sum);
    auto p2 = c.ireduce_scatter(irs.data(), mine.data(), count, ElemType::BF16, ReduceOp::Sum);
    p2->wait();
    p1->wait();
    bool ok_ar = true, ok_mx = true, ok_rs = true, ok_iar = true, ok_irs = true;
    for (std::size_t i = 0; i < count; ++i) {
      ok_ar = ok_ar && bf16_sum_ok(ar[i], serial[i], exact[i], abs_sum[i], n, bitwise);
      ok_iar = ok_iar && bf16_sum_ok(iar[i], serial[i], exact[i], abs_sum[i], n, bitwise);
      ok_mx = ok_mx && amx[i] == mx[i];
      const std::size_t j = std::size_t(me) * count + i;
      ok_rs = ok_rs && bf16_sum_ok(rs[i], serial[j], exact[j], abs_sum[j], n, bitwise);
      ok_irs = ok_irs && bf16_sum_ok(irs[i], serial[j], exact[j], abs_sum[j], n, bitwise);
    }
    expect(ok_ar, fmt::format("all_reduce sum bf16 n={} on {}", count, tag));
    expect(ok_mx, fmt::format("all_reduce max bf16 n={} on {}", count, tag));
    expect(ok_rs, fmt::format("reduce_scatter sum bf16 n={} on {}", count, tag));
    expect(ok_iar, fmt::format("iall_reduce sum bf16 n={} on {}", count, tag));
    expect(ok_irs, fmt::format("ireduce_scatter sum bf16 n={} on {}", count, tag));
  }
  c.barrier();
}

int body(MpiRuntime& mpi, int, char**) {
  for (bool det : {false, true}) {
    CommOptions o;
    o.deterministic = det;
    o.timeout_seconds = 120;
    std::unique_ptr<Communicator> world = make_mpi_world(o);
    check_group(*world, det, 1);
    check_nonblocking(*world, det, 51);
    check_bf16(*world, det, 71);
    if (mpi.world_size() % 2 == 0) {
      GridSizes s;
      s.tp = 2;
      s.pp = mpi.world_size() >= 4 && mpi.world_size() % 4 == 0 ? 2 : 1;
      ProcessGrid grid(mpi.world_size(), mpi.rank(), s);
      GridComms gc = make_grid_comms(grid, o, "mpi");
      check_group(*gc.tp, det, 11);
      check_group(*gc.dp, det, 21);
      check_nonblocking(*gc.dp, det, 61);
      check_bf16(*gc.dp, det, 81);
      check_group(*gc.pp, det, 31);
      if (gc.embedding) check_group(*gc.embedding, det, 41);
    }
    if (mpi.world_size() % 2 == 0) {
      // Expert groups: EP 2 inside DP (TP 1), and EP 2 x TP 2 on 4k ranks.
      GridSizes s;
      s.ep = 2;
      s.tp = mpi.world_size() % 4 == 0 ? 2 : 1;
      ProcessGrid grid(mpi.world_size(), mpi.rank(), s);
      GridComms gc = make_grid_comms(grid, o, "mpi");
      expect(gc.ep->world_ranks() == grid.expert_model_parallel_group(), "ep communicator ranks");
      expect(gc.expert_dp->world_ranks() == grid.expert_data_parallel_group(), "expert_dp communicator ranks");
      check_group(*gc.ep, det, 91);
      check_group(*gc.expert_dp, det, 101);
      check_group(*gc.expert_mp, det, 111);
    }
  }
  // Every rank's verdict on rank 0.
  CommOptions o;
  std::unique_ptr<Communicator> world = make_mpi_world(o);
  int32_t f = failures;
  world->all_reduce(&f, 1, ElemType::I32, ReduceOp::Sum);
  if (mpi.rank() == 0) log::info("comm_check: {} ranks, {} failures", mpi.world_size(), f);
  return f == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return gptrain::parallel::run_mpi_main("mpi_comm_check", body, argc, argv); }
