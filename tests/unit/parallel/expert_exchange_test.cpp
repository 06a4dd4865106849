// The expert-parallel traffic estimate (parallel/plan/expert_exchange.h) against the rows a real
// dispatch plan sends under exactly uniform routing (token n chooses experts n*K .. n*K+K-1 mod E), for
// dropless, capacity-bound and padded plans; and the allgather volume.
#include "kernels/backend.h"
#include "kernels/moe/moe.h"
#include "parallel/plan/expert_exchange.h"

#include <catch2/catch.hpp>

using namespace gptrain;
using namespace gptrain::parallel;

TEST_CASE("expert exchange volume equals a uniform routing's dispatch plan", "[parallel]") {
  auto be = make_backend("cpu", DType::F32);
  const int N = 48, E = 8, K = 2;
  std::vector<int32_t> experts(N * K), dest(N * K), seg(E);
  std::vector<float> probs(N * K, 0.5f);
  for (int n = 0; n < N; ++n)
    for (int k = 0; k < K; ++k) experts[n * K + k] = (n * K + k) % E;
  for (int ep : {1, 2, 4, 8})
    for (double factor : {-1.0, 0.5, 1.0, 2.0})
      for (bool pad : {false, true}) {
        if (pad && factor < 0) continue;
        const int cap = factor < 0 ? -1 : moe_expert_capacity(N, E, K, factor);
        be->moe_dispatch_plan(dest.data(), seg.data(), experts.data(), probs.data(), N, E, K, cap, MoeDropPolicy::Probs,
                              pad);
        // Rank 0 of the EP group: what leaves it is every row for experts E/EP and up.
        DispatchPlan p;
        p.ep = ep;
        p.num_experts = E;
        p.local_experts = E / ep;
        p.segment_rows.assign(std::size_t(ep) * E, 0);
        std::copy(seg.begin(), seg.end(), p.segment_rows.begin());
        int R = 0;
        for (int32_t s : seg) R += s;
        ExpertExchangeShape s{N, K, E, ep, factor, pad, TokenDispatcherType::AllToAll};
        INFO("ep " << ep << " factor " << factor << " pad " << pad);
        CHECK(rows_sent_per_exchange(s) == double(p.rows_sent_to_others()));
        s.type = TokenDispatcherType::AllGather;
        CHECK(rows_sent_per_exchange(s) == double(R) * (ep - 1));
        CHECK(exchange_bytes_per_step(s, 3, 5, 16, 2) == double(R) * (ep - 1) * 4 * 3 * 5 * 16 * 2);
        // Expert tensor parallelism sums the local experts' rows, all R with EP 1, twice per layer and
        // micro-batch; experts over the TP ranks gather every other rank's R / EP rows.
        CHECK(expert_partial_sum_rows_per_step(s, 3, 5) == double(R) * 2 * 3 * 5);
        CHECK(expert_partial_sum_bytes_per_step(s, 2, 3, 5, 16, 2) == double(R) * 2 * 3 * 5 * 16 * 2 * 2 * 0.5);
        CHECK(over_tp_rows_sent_per_gather(s) == double(p.rows_sent_to_others()));
      }
}
