// The process grid: world = TP x CP x EP x DP x PP, in Megatron's default rank order "tp-cp-ep-dp-pp"
// (megatron/core/parallel_state.py): TP varies fastest, PP slowest, so a TP group is consecutive
// ranks (one node's NVLink domain) and pipeline neighbours are world/PP ranks apart.
//     rank = tp + TP * (cp + CP * (ep + EP * (dp + DP * pp)))
// CP and EP have slots so that the order and group maths need not change when they arrive; today both
// must be 1 (validated). This file is pure arithmetic: communicators are built from these rank lists.
#pragma once

#include "core/config/parallel_args.h"

#include <string>
#include <vector>

namespace gptrain::parallel {

struct GridSizes {
  int tp = 1;
  int pp = 1;
  int cp = 1;  // reserved: must be 1
  int ep = 1;  // reserved: must be 1
};

struct GridCoord {
  int tp = 0, cp = 0, ep = 0, dp = 0, pp = 0;
};

class ProcessGrid {
 public:
  // Validates the sizes against the world (clear messages naming the flags) and derives DP.
  ProcessGrid(int world_size, int rank, GridSizes sizes);

  int world_size() const { return world_; }
  int rank() const { return rank_; }
  int tp_size() const { return s_.tp; }
  int pp_size() const { return s_.pp; }
  int cp_size() const { return s_.cp; }
  int ep_size() const { return s_.ep; }
  int dp_size() const { return dp_; }
  const GridCoord& coord() const { return me_; }
  int tp_rank() const { return me_.tp; }
  int pp_rank() const { return me_.pp; }
  int dp_rank() const { return me_.dp; }
  bool is_first_stage() const { return me_.pp == 0; }
  bool is_last_stage() const { return me_.pp == s_.pp - 1; }

  int rank_of(const GridCoord& c) const;
  GridCoord coord_of(int rank) const;

  // Ranks of this rank's group along one dimension, in group-rank order (the index in the list is
  // the rank inside that group). Every rank of a group computes the same list.
  std::vector<int> tp_group() const;
  std::vector<int> pp_group() const;
  std::vector<int> dp_group() const;
  std::vector<int> model_parallel_group() const;  // TP x PP (the ranks that hold one model replica)
  // First and last pipeline stage of this pipeline (one rank when PP == 1): they share the tied
  // word embeddings and all-reduce its gradient.
  std::vector<int> embedding_group() const;
  // Every group of one kind, for collective group creation (MPI_Comm_split needs one colour per rank).
  int tp_group_index() const;
  int pp_group_index() const;
  int dp_group_index() const;
  int mp_group_index() const;

  std::string describe() const;  // "world 8 = TP 2 x PP 2 x DP 2; rank 5 = (tp 1, dp 0, pp 1)"

 private:
  std::vector<int> group_along(int dim) const;
  int world_;
  int rank_;
  GridSizes s_;
  int dp_;
  GridCoord me_;
};

// The grid sizes of the parallel flags (DP follows from the world size).
GridSizes grid_sizes(const ParallelArgs& p);

}  // namespace gptrain::parallel
