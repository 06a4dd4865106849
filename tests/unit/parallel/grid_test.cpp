// Process grid: Megatron's rank order and groups (the 16-GPU example of megatron/core/parallel_state.py:
// TP 2, PP 4 -> DP 2), validation messages, launcher environment discovery.
#include "core/common/error.h"
#include "parallel/grid/grid.h"

#include <catch2/catch.hpp>

#include <map>
#include <set>

using namespace gptrain;
using namespace gptrain::parallel;

namespace {
std::set<std::vector<int>> all_groups(int world, GridSizes s, std::vector<int> (ProcessGrid::*group)() const) {
  std::set<std::vector<int>> out;
  for (int r = 0; r < world; ++r) out.insert((ProcessGrid(world, r, s).*group)());
  return out;
}
}  // namespace

TEST_CASE("grid follows Megatron's tp-cp-ep-dp-pp rank order", "[parallel]") {
  GridSizes s;
  s.tp = 2;
  s.pp = 4;
  ProcessGrid g(16, 5, s);
  CHECK(g.dp_size() == 2);
  CHECK(g.tp_rank() == 1);
  CHECK(g.dp_rank() == 0);
  CHECK(g.pp_rank() == 1);
  using G = std::set<std::vector<int>>;
  CHECK(all_groups(16, s, &ProcessGrid::tp_group) ==
        G{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}, {12, 13}, {14, 15}});
  CHECK(all_groups(16, s, &ProcessGrid::dp_group) ==
        G{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}});
  CHECK(all_groups(16, s, &ProcessGrid::pp_group) == G{{0, 4, 8, 12}, {1, 5, 9, 13}, {2, 6, 10, 14}, {3, 7, 11, 15}});
  CHECK(all_groups(16, s, &ProcessGrid::embedding_group) == G{{0, 12}, {1, 13}, {2, 14}, {3, 15}});
  CHECK(g.model_parallel_group() == std::vector<int>{0, 1, 4, 5, 8, 9, 12, 13});
  for (int r = 0; r < 16; ++r) CHECK(g.rank_of(g.coord_of(r)) == r);
}

TEST_CASE("grid group indices partition the world", "[parallel]") {
  GridSizes s;
  s.tp = 2;
  s.pp = 2;
  std::map<int, std::vector<int>> by_index;
  for (int r = 0; r < 8; ++r) {
    ProcessGrid g(8, r, s);
    by_index[g.dp_group_index()].push_back(r);
    CHECK(g.dp_group()[g.dp_rank()] == r);
    CHECK(g.tp_group()[g.tp_rank()] == r);
    CHECK(g.pp_group()[g.pp_rank()] == r);
  }
  CHECK(by_index.size() == 4);
  for (auto& [idx, members] : by_index) CHECK(ProcessGrid(8, idx, s).dp_group() == members);
}

TEST_CASE("grid validation names the flag", "[parallel]") {
  GridSizes s;
  s.tp = 4;
  REQUIRE_THROWS_WITH(ProcessGrid(6, 0, s),
                      Catch::Contains("--tensor-model-parallel-size 4") && Catch::Contains("world size 6"));
  s.tp = 0;
  REQUIRE_THROWS_WITH(ProcessGrid(4, 0, s), Catch::Contains("--tensor-model-parallel-size must be >= 1"));
  s.tp = 1;
  s.cp = 4;
  REQUIRE_THROWS_WITH(ProcessGrid(6, 0, s),
                      Catch::Contains("--context-parallel-size 4") && Catch::Contains("world size 6"));
  s.cp = 0;
  REQUIRE_THROWS_WITH(ProcessGrid(4, 0, s), Catch::Contains("--context-parallel-size must be >= 1"));
}

// Context parallelism sits between TP and DP (tp-cp-ep-dp-pp): TP 2 x CP 2 x PP 2 on 16 ranks -> DP 2.
TEST_CASE("grid places CP between TP and DP and reduces gradients over DP x CP", "[parallel]") {
  GridSizes s;
  s.tp = 2;
  s.cp = 2;
  s.pp = 2;
  ProcessGrid g(16, 6, s);
  CHECK(g.dp_size() == 2);
  CHECK(g.cp_rank() == 1);
  CHECK(g.dp_rank() == 1);
  CHECK(g.dp_cp_size() == 4);
  CHECK(g.dp_cp_rank() == 3);
  using G = std::set<std::vector<int>>;
  CHECK(all_groups(16, s, &ProcessGrid::cp_group) ==
        G{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}});
  CHECK(all_groups(16, s, &ProcessGrid::dp_group) ==
        G{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}});
  CHECK(all_groups(16, s, &ProcessGrid::dp_cp_group) ==
        G{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}});
  CHECK(all_groups(16, s, &ProcessGrid::pp_group) ==
        G{{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}});
  for (int r = 0; r < 16; ++r) {
    ProcessGrid h(16, r, s);
    CHECK(h.dp_cp_group()[h.dp_cp_rank()] == r);
    CHECK(h.cp_group()[h.cp_rank()] == r);
  }
  CHECK(g.describe() == "world 16 = TP 2 x CP 2 x PP 2 x DP 2; rank 6 = (tp 0, cp 1, dp 1, pp 0)");
}

// Megatron's expert rank generator (ETP = TP, its default; EP, EDP = world / (TP x EP x PP), PP, order
// tp-cp-ep-dp-pp):
// world 16, TP 2, PP 2, EP 2 -> DP 4, EDP 2.
TEST_CASE("expert groups follow Megatron's expert rank generator", "[parallel]") {
  GridSizes s;
  s.tp = 2;
  s.pp = 2;
  s.ep = 2;
  using G = std::set<std::vector<int>>;
  CHECK(all_groups(16, s, &ProcessGrid::dp_group) == G{{0, 2, 4, 6}, {1, 3, 5, 7}, {8, 10, 12, 14}, {9, 11, 13, 15}});
  CHECK(all_groups(16, s, &ProcessGrid::expert_model_parallel_group) ==
        G{{0, 2}, {1, 3}, {4, 6}, {5, 7}, {8, 10}, {9, 11}, {12, 14}, {13, 15}});
  CHECK(all_groups(16, s, &ProcessGrid::expert_data_parallel_group) ==
        G{{0, 4}, {1, 5}, {2, 6}, {3, 7}, {8, 12}, {9, 13}, {10, 14}, {11, 15}});
  CHECK(all_groups(16, s, &ProcessGrid::expert_tensor_model_pipeline_group) ==
        G{{0, 1, 2, 3, 8, 9, 10, 11}, {4, 5, 6, 7, 12, 13, 14, 15}});
  // Independently: the expert generator's formula rank = etp + ETP * (ep + EP * (edp + EDP * pp)).
  for (int r = 0; r < 16; ++r) {
    ProcessGrid g(16, r, s);
    CHECK(g.tp_rank() + 2 * (g.ep_rank() + 2 * (g.expert_dp_rank() + 2 * g.pp_rank())) == r);
    CHECK(g.expert_model_parallel_group()[g.ep_rank()] == r);
    CHECK(g.expert_data_parallel_group()[g.expert_dp_rank()] == r);
    CHECK(g.expert_dp_size() == 2);
  }
  CHECK(ProcessGrid(16, 13, s).describe() ==
        "world 16 = TP 2 x PP 2 x DP 4 (experts: EP 2 x EDP 2); rank 13 = (tp 1, dp 2, pp 1, ep 0, edp 1)");
  // EP = DP: one expert-data-parallel rank; the dense groups are those of EP 1.
  s.ep = 4;
  CHECK(all_groups(16, s, &ProcessGrid::expert_data_parallel_group).size() == 16);
  GridSizes dense = s;
  dense.ep = 1;
  CHECK(all_groups(16, s, &ProcessGrid::dp_group) == all_groups(16, dense, &ProcessGrid::dp_group));
  CHECK(all_groups(16, s, &ProcessGrid::pp_group) == all_groups(16, dense, &ProcessGrid::pp_group));
}

TEST_CASE("ETP 1 with EP = TP: Megatron's expert groups run over the TP ranks", "[parallel]") {
  GridSizes s;
  s.tp = 2;
  s.pp = 2;
  s.ep = 2;
  s.etp = 1;
  using G = std::set<std::vector<int>>;
  // Megatron's expert generator with ETP 1: rank = ep + EP * (edp + EDP * pp), EDP = world / (ETP x EP x PP) = 2.
  for (int r = 0; r < 8; ++r) {
    ProcessGrid g(8, r, s);
    REQUIRE(g.experts_over_tp());
    CHECK(g.ep_rank() + 2 * (g.expert_dp_rank() + 2 * g.pp_rank()) == r);
    CHECK(g.expert_model_parallel_group()[g.ep_rank()] == r);
    CHECK(g.expert_data_parallel_group()[g.expert_dp_rank()] == r);
    CHECK(g.expert_dp_size() == 2);
    CHECK(g.dp_rank_of_expert_dp(g.expert_dp_rank()) == g.dp_rank());
  }
  CHECK(all_groups(8, s, &ProcessGrid::expert_model_parallel_group) == G{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(all_groups(8, s, &ProcessGrid::expert_data_parallel_group) == G{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  CHECK(all_groups(8, s, &ProcessGrid::expert_tensor_model_pipeline_group) == G{{0, 1, 4, 5}, {2, 3, 6, 7}});
  // ETP = TP (the default, etp 0 or 2) keeps the EP groups inside DP.
  s.etp = 2;
  CHECK(all_groups(8, s, &ProcessGrid::expert_model_parallel_group) == G{{0, 2}, {1, 3}, {4, 6}, {5, 7}});
  s.etp = 1;
  s.ep = 4;
  REQUIRE_THROWS_WITH(ProcessGrid(8, 0, s), Catch::Contains("so EP must equal TP"));
  s.ep = 2;
  s.etp = 3;
  REQUIRE_THROWS_WITH(ProcessGrid(8, 0, s), Catch::Contains("--expert-tensor-parallel-size 3 must be 1 or"));
}

TEST_CASE("expert grid validation names the flags", "[parallel]") {
  GridSizes s;
  s.tp = 2;
  s.ep = 4;
  REQUIRE_THROWS_WITH(ProcessGrid(4, 0, s),
                      Catch::Contains("--expert-model-parallel-size 4 must divide the data-parallel size 2"));
  s.ep = 2;
  CHECK(ProcessGrid(4, 0, s).ep_size() == 2);
  s.ep = 0;
  REQUIRE_THROWS_WITH(ProcessGrid(4, 0, s), Catch::Contains("--expert-model-parallel-size must be >= 1"));
}

TEST_CASE("hybrid sharding groups: consecutive DP blocks, replicas across them", "[parallel]") {
  // Megatron's partial distributed optimizer: DP 8 (TP 2) as 2 instances; the intra-instance group is DP / N
  // consecutive members of the DP group, the inter-instance group the members at the same place in each.
  GridSizes s;
  s.tp = 2;
  s.dist_opt_instances = 2;
  using G = std::set<std::vector<int>>;
  CHECK(all_groups(16, s, &ProcessGrid::intra_dp_group) ==
        G{{0, 2, 4, 6}, {8, 10, 12, 14}, {1, 3, 5, 7}, {9, 11, 13, 15}});
  CHECK(all_groups(16, s, &ProcessGrid::inter_dp_group) ==
        G{{0, 8}, {2, 10}, {4, 12}, {6, 14}, {1, 9}, {3, 11}, {5, 13}, {7, 15}});
  CHECK(ProcessGrid(16, 10, s).intra_dp_rank() == 1);
  CHECK(ProcessGrid(16, 10, s).dist_opt_instance() == 1);
  // With EP 2 (EDP 4): an instance's routed experts shard over EDP / N = 2 ranks of the same ep; the
  // inter-instance group serves both kinds (as Megatron's shared group).
  s.ep = 2;
  CHECK(all_groups(16, s, &ProcessGrid::intra_expert_dp_group) ==
        G{{0, 4}, {2, 6}, {8, 12}, {10, 14}, {1, 5}, {3, 7}, {9, 13}, {11, 15}});
  for (int r = 0; r < 16; ++r) {
    ProcessGrid g(16, r, s);
    CHECK(g.intra_expert_dp_group()[g.intra_expert_dp_rank()] == r);
    CHECK(g.intra_dp_group()[g.intra_dp_rank()] == r);
    CHECK(g.inter_dp_group()[g.dist_opt_instance()] == r);
  }
  CHECK(ProcessGrid(16, 10, s).describe().find("; distributed optimizer: 2 instances of DP 4 (instance 1)") !=
        std::string::npos);
  s.dist_opt_instances = 3;
  REQUIRE_THROWS_WITH(ProcessGrid(16, 0, s),
                      Catch::Contains("--num-distributed-optimizer-instances 3 must divide the data-parallel size 8"));
  s.dist_opt_instances = 4;  // DP 8 / 4 = 2, but EDP 4 / 4 = 1: allowed
  CHECK(ProcessGrid(16, 0, s).intra_expert_dp_size() == 1);
  s.dist_opt_instances = 8;  // EDP 4 is not divisible by 8
  REQUIRE_THROWS_WITH(ProcessGrid(16, 0, s), Catch::Contains("expert-data-parallel size 4"));
}
