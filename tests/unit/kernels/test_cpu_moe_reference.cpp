// Hidden: run by tests/integration/moe_reference.sh with GPTRAIN_MOE_REFERENCE pointing at the JSON that
// tests/python/moe_reference.py wrote (numpy from Megatron's definitions, and transformers' Mixtral block).
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/backend.h"
#include "kernels/moe/moe.h"
#include "kernel_test_util.h"
#include "moe_test_util.h"

using namespace gptrain;
using namespace gptrain::test;

namespace {

nlohmann::json load_reference() {
  const char* path = std::getenv("GPTRAIN_MOE_REFERENCE");
  REQUIRE(path != nullptr);
  std::ifstream in(path);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

MoeScore score_of(const nlohmann::json& c) {
  return c.at("score").get<std::string>() == "softmax" ? MoeScore::Softmax : MoeScore::Sigmoid;
}

}  // namespace

TEST_CASE("moe ops: match the numpy / transformers reference", "[.moe_reference]") {
  const nlohmann::json ref = load_reference();
  auto be = make_backend("cpu", DType::F32);

  for (const auto& c : ref.at("router")) {
    const int N = c.at("N"), E = c.at("E"), K = c.at("K");
    const bool pre = c.at("pre_softmax");
    INFO("router " << c.at("score").get<std::string>() << " pre_softmax=" << pre << " N=" << N << " E=" << E
                   << " K=" << K);
    const Routing r = route(*be, c.at("logits").get<std::vector<float>>(), N, E, K, score_of(c), pre);
    CHECK(r.experts == c.at("experts").get<std::vector<int32_t>>());
    CHECK(max_abs_diff(r.probs, c.at("probs").get<std::vector<float>>()) < 1e-6);
    CHECK(max_abs_diff(r.scores, c.at("scores").get<std::vector<float>>()) < 1e-6);
  }

  // The expert bias and group-limited routing change the choice (every case differs from the plain top-k).
  for (const auto& c : ref.at("choice")) {
    const int N = c.at("N"), E = c.at("E"), K = c.at("K");
    const bool pre = c.at("pre_softmax");
    std::vector<float> bias;
    if (!c.at("expert_bias").is_null()) bias = c.at("expert_bias").get<std::vector<float>>();
    const MoeChoice choice{bias.empty() ? nullptr : bias.data(), c.at("num_groups").get<int>(),
                           c.at("group_topk").get<int>()};
    INFO("choice " << c.at("score").get<std::string>() << " pre_softmax=" << pre << " N=" << N << " E=" << E << " K="
                   << K << " bias=" << !bias.empty() << " groups=" << choice.num_groups << "/" << choice.group_topk);
    const Routing r = route(*be, c.at("logits").get<std::vector<float>>(), N, E, K, score_of(c), pre, choice);
    CHECK(r.experts == c.at("experts").get<std::vector<int32_t>>());
    CHECK(max_abs_diff(r.probs, c.at("probs").get<std::vector<float>>()) < 1e-6);
    CHECK(max_abs_diff(r.scores, c.at("scores").get<std::vector<float>>()) < 1e-6);
  }

  int dropped_total = 0;
  for (const auto& c : ref.at("dispatch")) {
    const int N = c.at("N"), E = c.at("E"), K = c.at("K");
    const bool pad = c.at("pad");
    const std::string policy = c.at("policy");
    const int capacity =
        c.at("capacity_factor").is_null() ? -1 : moe_expert_capacity(N, E, K, c.at("capacity_factor").get<double>());
    INFO("dispatch N=" << N << " E=" << E << " K=" << K << " policy=" << policy << " pad=" << pad);
    CHECK(capacity == c.at("capacity").get<int>());
    std::vector<int32_t> dest(static_cast<std::size_t>(N) * K), seg(E);
    be->moe_dispatch_plan(dest.data(), seg.data(), c.at("experts").get<std::vector<int32_t>>().data(),
                          c.at("probs").get<std::vector<float>>().data(), N, E, K, capacity,
                          policy == "probs" ? MoeDropPolicy::Probs : MoeDropPolicy::Position, pad);
    CHECK(dest == c.at("dest_row").get<std::vector<int32_t>>());
    CHECK(seg == c.at("segment_rows").get<std::vector<int32_t>>());
    dropped_total += c.at("dropped").get<int>();
  }
  CHECK(dropped_total > 0);  // the cases do exercise dropping

  for (const auto& c : ref.at("balance")) {
    const int N = c.at("N"), E = c.at("E"), K = c.at("K"), seqs = c.at("seqs");
    INFO("load balancing N=" << N << " E=" << E << " K=" << K << " seqs=" << seqs);
    const Routing r = route(*be, c.at("logits").get<std::vector<float>>(), N, E, K, score_of(c), false);
    float loss = 0;
    be->moe_load_balancing_loss(&loss, r.scores.data(), r.experts.data(), N, E, K, seqs, c.at("coeff").get<float>());
    CHECK(loss == Approx(c.at("loss").get<double>()).epsilon(1e-5));
  }
  int sinkhorn_differs = 0;  // training cases whose Sinkhorn choice is not the plain top-k
  for (const auto& c : ref.at("sinkhorn")) {
    const int N = c.at("N"), E = c.at("E"), K = c.at("K");
    const bool train = c.at("train");
    INFO("sinkhorn N=" << N << " E=" << E << " K=" << K << " train=" << train);
    std::vector<float> probs(static_cast<std::size_t>(N) * K), normed(static_cast<std::size_t>(N) * E);
    std::vector<int32_t> experts(probs.size());
    be->moe_sinkhorn_router_forward(probs.data(), experts.data(), normed.data(),
                                    c.at("logits").get<std::vector<float>>().data(), N, E, K, train);
    CHECK(experts == c.at("experts").get<std::vector<int32_t>>());
    CHECK(max_abs_diff(probs, c.at("probs").get<std::vector<float>>()) < 1e-6);
    sinkhorn_differs += train && experts != c.at("plain_experts").get<std::vector<int32_t>>();
  }
  CHECK(sinkhorn_differs == 3);

  for (const auto& c : ref.at("z_loss")) {
    const int N = c.at("N"), E = c.at("E");
    float loss = 0;
    be->moe_z_loss(&loss, c.at("logits").get<std::vector<float>>().data(), N, E, c.at("coeff").get<float>());
    CHECK(loss == Approx(c.at("loss").get<double>()).epsilon(1e-5));
  }

  // Mixtral (transformers): which pre-softmax order is its routing, and its aux loss against Megatron's.
  const auto& m = ref.at("mixtral");
  const int N = m.at("N"), E = m.at("E"), K = m.at("K");
  const std::vector<float> logits = m.at("logits").get<std::vector<float>>();
  const std::vector<float> hf = m.at("weights").get<std::vector<float>>();
  auto dense = [&](const Routing& r) {
    std::vector<float> d(static_cast<std::size_t>(N) * E, 0.0f);
    for (int n = 0; n < N; ++n)
      for (int k = 0; k < K; ++k) d[static_cast<std::size_t>(n) * E + r.experts[n * K + k]] = r.probs[n * K + k];
    return d;
  };
  REQUIRE(hf.size() == static_cast<std::size_t>(N) * E);
  const Routing post = route(*be, logits, N, E, K, MoeScore::Softmax, false);
  const Routing pre = route(*be, logits, N, E, K, MoeScore::Softmax, true);
  CHECK(max_abs_diff(dense(post), hf) < 1e-6);  // softmax over the top-k (Megatron's default) = Mixtral
  CHECK(max_abs_diff(dense(pre), hf) > 1e-2);   // the top-k of the full softmax is not
  // transformers' load_balancing_loss_func = E * sum_e (count_e / N) * mean_n scores = K * Megatron's (coeff 1).
  float megatron = 0;
  be->moe_load_balancing_loss(&megatron, post.scores.data(), post.experts.data(), N, E, K, 1, 1.0f);
  CHECK(m.at("hf_aux_loss").get<double>() == Approx(static_cast<double>(K) * megatron).epsilon(1e-5));
  std::printf(
      "moe reference: compared %zu router, %zu dispatch (%d dropped choices), %zu balance, %zu z-loss "
      "cases and the Mixtral block\n",
      ref.at("router").size(), ref.at("dispatch").size(), dropped_total, ref.at("balance").size(),
      ref.at("z_loss").size());
}
