// The MoE tests' routing helper: one router forward on a backend, its three outputs as host vectors
// (the backend must work on host memory: the CPU backend).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/backend.h"

namespace gptrain::test {

struct Routing {
  std::vector<float> probs, scores;  // (N, K), (N, E)
  std::vector<int32_t> experts;      // (N, K)
};

inline Routing route(Backend& be, const std::vector<float>& logits, int N, int E, int K, MoeScore score, bool pre,
                     MoeChoice choice = {}) {
  Routing r{std::vector<float>(static_cast<std::size_t>(N) * K), std::vector<float>(static_cast<std::size_t>(N) * E),
            std::vector<int32_t>(static_cast<std::size_t>(N) * K)};
  be.moe_router_forward(r.probs.data(), r.experts.data(), r.scores.data(), logits.data(), N, E, K, score, pre, choice);
  return r;
}

}  // namespace gptrain::test
