#include "parallel/grid/grid.h"

#include "core/common/error.h"

#include <fmt/format.h>

namespace gptrain::parallel {
namespace {
// Dimension indices in rank order, fastest first.
enum Dim { kTP = 0, kCP = 1, kDP = 2, kPP = 3, kNumDims = 4 };
}  // namespace

ProcessGrid::ProcessGrid(int world_size, int rank, GridSizes sizes) : world_(world_size), rank_(rank), s_(sizes) {
  check(world_size >= 1 && rank >= 0 && rank < world_size, "process grid: rank {} outside a world of {}", rank,
        world_size);
  check(s_.tp >= 1, "--tensor-model-parallel-size must be >= 1, got {}", s_.tp);
  check(s_.pp >= 1, "--pipeline-model-parallel-size must be >= 1, got {}", s_.pp);
  check(s_.cp >= 1, "--context-parallel-size must be >= 1, got {}", s_.cp);
  check(s_.ep >= 1, "--expert-model-parallel-size must be >= 1, got {}", s_.ep);
  const int mp = s_.tp * s_.pp * s_.cp;
  check(world_size % mp == 0,
        "world size {} is not divisible by --tensor-model-parallel-size {} x --pipeline-model-parallel-size {} x "
        "--context-parallel-size {} (= {}); launch a multiple of {} processes",
        world_size, s_.tp, s_.pp, s_.cp, mp, mp);
  dp_ = world_size / mp;
  check(s_.etp == 0 || s_.etp == 1 || s_.etp == s_.tp,
        "--expert-tensor-parallel-size {} must be 1 or --tensor-model-parallel-size {} (other expert grids are not "
        "implemented)",
        s_.etp, s_.tp);
  if (experts_over_tp()) {
    check(s_.ep == s_.tp,
          "--expert-model-parallel-size {} with --expert-tensor-parallel-size 1 and --tensor-model-parallel-size {}: "
          "the experts are then split over the TP ranks, so EP must equal TP (Megatron's EP groups that also span "
          "data-parallel ranks are not implemented)",
          s_.ep, s_.tp);
  } else {
    check(dp_ % s_.ep == 0,
          "--expert-model-parallel-size {} must divide the data-parallel size {} (world {} / (TP {} x PP {})): "
          "the experts are split inside the data-parallel group",
          s_.ep, dp_, world_size, s_.tp, s_.pp);
  }
  check(s_.dist_opt_instances >= 1, "--num-distributed-optimizer-instances must be >= 1, got {}",
        s_.dist_opt_instances);
  check(dp_ % s_.dist_opt_instances == 0 && expert_dp_size() % s_.dist_opt_instances == 0,
        "--num-distributed-optimizer-instances {} must divide the data-parallel size {} and the expert-data-parallel "
        "size {}: every instance is a replica of whole shards",
        s_.dist_opt_instances, dp_, expert_dp_size());
  me_ = coord_of(rank);
}

int ProcessGrid::rank_of(const GridCoord& c) const { return c.tp + s_.tp * (c.cp + s_.cp * (c.dp + dp_ * c.pp)); }

GridCoord ProcessGrid::coord_of(int rank) const {
  GridCoord c;
  int r = rank;
  c.tp = r % s_.tp;
  r /= s_.tp;
  c.cp = r % s_.cp;
  r /= s_.cp;
  c.dp = r % dp_;
  c.pp = r / dp_;
  return c;
}

std::vector<int> ProcessGrid::group_along(int dim) const {
  const int sizes[kNumDims] = {s_.tp, s_.cp, dp_, s_.pp};
  std::vector<int> ranks;
  for (int i = 0; i < sizes[dim]; ++i) {
    GridCoord c = me_;
    int* fields[kNumDims] = {&c.tp, &c.cp, &c.dp, &c.pp};
    *fields[dim] = i;
    ranks.push_back(rank_of(c));
  }
  return ranks;
}

std::vector<int> ProcessGrid::tp_group() const { return group_along(kTP); }
std::vector<int> ProcessGrid::pp_group() const { return group_along(kPP); }
std::vector<int> ProcessGrid::dp_group() const { return group_along(kDP); }
std::vector<int> ProcessGrid::cp_group() const { return group_along(kCP); }

std::vector<int> ProcessGrid::dp_cp_group() const {
  std::vector<int> ranks;
  for (int d = 0; d < dp_; ++d) {
    for (int c = 0; c < s_.cp; ++c) {
      GridCoord g = me_;
      g.cp = c;
      g.dp = d;
      ranks.push_back(rank_of(g));
    }
  }
  return ranks;
}

std::vector<int> ProcessGrid::model_parallel_group() const {
  std::vector<int> ranks;
  for (int p = 0; p < s_.pp; ++p) {
    for (int t = 0; t < s_.tp; ++t) {
      GridCoord c = me_;
      c.tp = t;
      c.pp = p;
      ranks.push_back(rank_of(c));
    }
  }
  return ranks;
}

std::vector<int> ProcessGrid::expert_model_parallel_group() const {
  if (experts_over_tp()) return tp_group();
  std::vector<int> ranks;
  for (int e = 0; e < s_.ep; ++e) {
    GridCoord c = me_;
    c.dp = e + s_.ep * expert_dp_rank();
    ranks.push_back(rank_of(c));
  }
  return ranks;
}

std::vector<int> ProcessGrid::expert_data_parallel_group() const {
  if (experts_over_tp()) return dp_group();
  std::vector<int> ranks;
  for (int d = 0; d < expert_dp_size(); ++d) {
    GridCoord c = me_;
    c.dp = ep_rank() + s_.ep * d;
    ranks.push_back(rank_of(c));
  }
  return ranks;
}

std::vector<int> ProcessGrid::intra_dp_group() const {
  std::vector<int> ranks;
  for (int d = 0; d < intra_dp_size(); ++d) {
    GridCoord c = me_;
    c.dp = dist_opt_instance() * intra_dp_size() + d;
    ranks.push_back(rank_of(c));
  }
  return ranks;
}

std::vector<int> ProcessGrid::intra_expert_dp_group() const {
  std::vector<int> ranks;
  const int first = expert_dp_rank() - intra_expert_dp_rank();
  for (int d = 0; d < intra_expert_dp_size(); ++d) {
    GridCoord c = me_;
    c.dp = dp_rank_of_expert_dp(first + d);
    ranks.push_back(rank_of(c));
  }
  return ranks;
}

std::vector<int> ProcessGrid::inter_dp_group() const {
  std::vector<int> ranks;
  for (int i = 0; i < s_.dist_opt_instances; ++i) {
    GridCoord c = me_;
    c.dp = i * intra_dp_size() + intra_dp_rank();
    ranks.push_back(rank_of(c));
  }
  return ranks;
}

std::vector<int> ProcessGrid::expert_tensor_model_pipeline_group() const {
  if (experts_over_tp()) return model_parallel_group();  // EP x PP with ep = tp
  std::vector<int> ranks;
  for (int p = 0; p < s_.pp; ++p) {
    for (int e = 0; e < s_.ep; ++e) {
      for (int t = 0; t < s_.tp; ++t) {
        GridCoord c = me_;
        c.tp = t;
        c.dp = e + s_.ep * expert_dp_rank();
        c.pp = p;
        ranks.push_back(rank_of(c));
      }
    }
  }
  return ranks;
}

std::vector<int> ProcessGrid::embedding_group() const {
  std::vector<int> pp = pp_group();
  if (pp.size() == 1) return pp;
  return {pp.front(), pp.back()};
}

// A group's index: the rank with this group's coordinate zeroed along its own dimension(s).
int ProcessGrid::tp_group_index() const { return group_along(kTP).front(); }
int ProcessGrid::pp_group_index() const { return group_along(kPP).front(); }
int ProcessGrid::dp_group_index() const { return group_along(kDP).front(); }
int ProcessGrid::mp_group_index() const { return model_parallel_group().front(); }

std::string ProcessGrid::describe() const {
  if (s_.cp > 1)
    return fmt::format("world {} = TP {} x CP {} x PP {} x DP {}; rank {} = (tp {}, cp {}, dp {}, pp {})", world_,
                       s_.tp, s_.cp, s_.pp, dp_, rank_, me_.tp, me_.cp, me_.dp, me_.pp);
  if (s_.dist_opt_instances > 1) {
    GridSizes flat = s_;
    flat.dist_opt_instances = 1;
    return ProcessGrid(world_, rank_, flat).describe() +
           fmt::format("; distributed optimizer: {} instances of DP {} (instance {})", s_.dist_opt_instances,
                       intra_dp_size(), dist_opt_instance());
  }
  if (experts_over_tp())
    return fmt::format(
        "world {} = TP {} x PP {} x DP {} (experts: EP {} over the TP ranks x EDP {}); rank {} = (tp {}, dp {}, pp {})",
        world_, s_.tp, s_.pp, dp_, s_.ep, dp_, rank_, me_.tp, me_.dp, me_.pp);
  if (s_.ep == 1)
    return fmt::format("world {} = TP {} x PP {} x DP {}; rank {} = (tp {}, dp {}, pp {})", world_, s_.tp, s_.pp, dp_,
                       rank_, me_.tp, me_.dp, me_.pp);
  return fmt::format(
      "world {} = TP {} x PP {} x DP {} (experts: EP {} x EDP {}); rank {} = (tp {}, dp {}, pp {}, ep {}, edp {})",
      world_, s_.tp, s_.pp, dp_, s_.ep, expert_dp_size(), rank_, me_.tp, me_.dp, me_.pp, ep_rank(), expert_dp_rank());
}

GridSizes grid_sizes(const ParallelArgs& p) {
  GridSizes s;
  s.tp = p.tensor_model_parallel_size;
  s.pp = p.pipeline_model_parallel_size;
  s.cp = p.context_parallel_size;
  s.ep = p.expert_model_parallel_size;
  s.dist_opt_instances = p.num_distributed_optimizer_instances;
  s.etp = expert_tensor_parallel_size(p);
  return s;
}

}  // namespace gptrain::parallel
