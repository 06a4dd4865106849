// The batched point-to-point plan of every pipeline schedule (pipeline_p2p.h) is sound without tags:
// between each pair of ranks, messages are sent and received in the same order, each once, and the
// ranks' batches complete when every batch blocks until all its transfers have met their peers
// (MPI Isend/Irecv + Waitall, NCCL group semantics), simulated here.
#include "parallel/pipeline/pipeline_p2p.h"

#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <tuple>

using namespace gptrain::parallel;

namespace {

using Batches = std::vector<std::vector<PipeTransfer>>;
using Key = std::tuple<bool, int, int>;  // (forward, micro-batch, receiving virtual stage)
Key key(const PipeMessage& m) { return {m.forward, m.microbatch, m.virtual_stage}; }

// Every message of the ordered pair (a -> b) appears in a's sends and b's receives in the same order.
void check_order(const std::vector<Batches>& all, int pp, std::size_t expected_messages) {
  std::map<std::pair<int, int>, std::vector<Key>> sent, received;
  std::size_t n = 0;
  for (int r = 0; r < pp; ++r)
    for (const auto& batch : all[r])
      for (const PipeTransfer& t : batch) {
        CHECK(t.peer >= 0);
        CHECK(t.peer < pp);
        if (t.send) {
          sent[{r, t.peer}].push_back(key(t.msg));
          ++n;
        } else {
          received[{t.peer, r}].push_back(key(t.msg));
        }
      }
  CHECK(sent == received);
  CHECK(n == expected_messages);
  std::set<Key> unique;
  for (auto& [pair, keys] : sent) unique.insert(keys.begin(), keys.end());
  CHECK(unique.size() == n);
}

// A transfer completes once both ranks have posted it (their current batches hold it); a rank moves
// to its next batch when every transfer of its current one has completed.
bool completes(const std::vector<Batches>& all, int pp) {
  std::vector<std::size_t> pos(pp, 0);
  std::set<std::tuple<int, int, Key>> done;  // (sender, receiver, message)
  auto posted = [&](int r, bool send, int peer, const Key& k) {
    if (pos[r] >= all[r].size()) return false;
    for (const PipeTransfer& t : all[r][pos[r]])
      if (t.send == send && t.peer == peer && key(t.msg) == k) return true;
    return false;
  };
  for (;;) {
    bool progressed = false, finished = true;
    for (int r = 0; r < pp; ++r) {
      if (pos[r] == all[r].size()) continue;
      finished = false;
      bool all_done = true;
      for (const PipeTransfer& t : all[r][pos[r]]) {
        const int snd = t.send ? r : t.peer, rcv = t.send ? t.peer : r;
        const auto id = std::make_tuple(snd, rcv, key(t.msg));
        if (done.count(id)) continue;
        if (posted(t.peer, !t.send, r, key(t.msg))) {
          done.insert(id);
          progressed = true;
        } else {
          all_done = false;
        }
      }
      if (all_done) {
        ++pos[r];
        progressed = true;
      }
    }
    if (finished) return true;
    if (!progressed) return false;
  }
}

void check_schedule(int pp, int m, int v, bool train) {
  INFO("pp " << pp << " micro-batches " << m << " chunks " << v << (train ? " train" : " forward only"));
  std::vector<Batches> all(pp);
  for (int r = 0; r < pp; ++r) {
    const auto ops = train ? pipeline_schedule(pp, r, m, v) : forward_only_schedule(m, v);
    const int warmup = train ? pipeline_warmup(pp, r, m, v) : int(ops.size());
    int covered = 0;
    for (const PipeStep& s : pipeline_p2p_steps(ops, pp, r, v, warmup)) {
      CHECK(s.first == covered);  // the steps cut the list in order, every op once
      covered += s.count;
      int sends = 0, recvs = 0, fwd_recvs = 0;
      for (const PipeTransfer& t : s.batch) {
        (t.send ? sends : recvs) += 1;
        if (!t.send && t.msg.forward) ++fwd_recvs;
        if (t.send) CHECK(recvs == 0);  // sends first
      }
      CHECK(sends <= 2);
      CHECK(recvs <= 2);
      CHECK(fwd_recvs <= 1);  // one receive buffer per direction is enough
      all[r].push_back(s.batch);
    }
    CHECK(covered == int(ops.size()));
  }
  // Every stage boundary carries each micro-batch's activation, and (training) its gradient back.
  const std::size_t boundaries = std::size_t(pp * v - 1);
  check_order(all, pp, boundaries * m * (train ? 2 : 1));
  CHECK(completes(all, pp));
}

}  // namespace

TEST_CASE("batched pipeline p2p: same order on both sides, no deadlock, for every schedule", "[parallel]") {
  for (int pp : {1, 2, 3, 4, 5})
    for (int m : {1, 2, 3, 4, 5, 8, 13})
      for (bool train : {true, false}) check_schedule(pp, m, 1, train);
  for (int pp : {2, 3, 4, 5})
    for (int v : {2, 3, 4})
      for (int m : {pp, 2 * pp, 3 * pp, 5 * pp})
        for (bool train : {true, false}) check_schedule(pp, m, v, train);
}

TEST_CASE("batched pipeline p2p: a 1F1B step pairs send-forward with recv-backward", "[parallel]") {
  // PP 2, 3 micro-batches, rank 0 (warm-up 1): F0 | send F0, recv - | (F1 B0) | send F1, recv B0 ...
  const auto ops = schedule_1f1b(2, 0, 3);
  const auto st = pipeline_p2p_steps(ops, 2, 0, 1, pipeline_warmup(2, 0, 3, 1));
  // Steps: [F0] [F1 B0] [F2 B1] [B2] [].
  REQUIRE(st.size() == 5);
  CHECK((st[0].count == 1 && st[0].batch.empty()));
  REQUIRE(st[1].count == 2);
  REQUIRE(st[1].batch.size() == 2);
  CHECK((st[1].batch[0].send && st[1].batch[0].msg == PipeMessage{true, 0, 1}));
  CHECK((!st[1].batch[1].send && st[1].batch[1].peer == 1 && st[1].batch[1].msg == PipeMessage{false, 0, 0}));
  REQUIRE(st[2].batch.size() == 2);
  CHECK(st[2].batch[0].msg == PipeMessage{true, 1, 1});  // the first stage sends no gradient
  CHECK(st[2].batch[1].msg == PipeMessage{false, 1, 0});
  REQUIRE(st[3].batch.size() == 2);
  CHECK(st[3].batch[0].msg == PipeMessage{true, 2, 1});
  CHECK(st[3].batch[1].msg == PipeMessage{false, 2, 0});
  CHECK((st[4].count == 0 && st[4].batch.empty()));
}

TEST_CASE("batched pipeline p2p: one batch per op deadlocks the interleaved schedule", "[parallel]") {
  // Why steps pair a forward with the following backward: without the pairing (warm-up = all ops),
  // PP 2 x 2 chunks x 4 micro-batches cannot complete.
  std::vector<Batches> single(2), paired(2);
  for (int r = 0; r < 2; ++r) {
    const auto ops = pipeline_schedule(2, r, 4, 2);
    for (const PipeStep& s : pipeline_p2p_steps(ops, 2, r, 2, int(ops.size()))) single[r].push_back(s.batch);
    for (const PipeStep& s : pipeline_p2p_steps(ops, 2, r, 2, pipeline_warmup(2, r, 4, 2)))
      paired[r].push_back(s.batch);
  }
  CHECK_FALSE(completes(single, 2));
  CHECK(completes(paired, 2));
}

TEST_CASE("the p2p simulation detects a mismatched order", "[parallel]") {
  // Two sends 0 -> 1 received in the opposite order must fail the order check and deadlock.
  std::vector<Batches> all(2);
  all[0] = {{{true, 1, {true, 0, 1}}}, {{true, 1, {true, 1, 1}}}};
  all[1] = {{{false, 0, {true, 1, 1}}}, {{false, 0, {true, 0, 1}}}};
  CHECK_FALSE(completes(all, 2));
}
