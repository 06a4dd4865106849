// The process grid: world = TP x CP x DP x PP, in Megatron's default rank order "tp-cp-ep-dp-pp"
// (megatron/core/parallel_state.py): TP varies fastest, PP slowest, so a TP group is consecutive
// ranks (one node's NVLink domain) and pipeline neighbours are world/PP ranks apart.
//     rank = tp + TP * (cp + CP * (dp + DP * pp))
// CP (--context-parallel-size) splits each sample's sequence: the CP ranks of one TP rank hold the same
// samples, different chunks of their tokens (load-balanced, kernels/attention/attention_block_math.h).
// Gradients and the distributed optimizer then work over the DP x CP group (Megatron's
// data-parallel group "with context parallel"): dp_cp_group, ranks cp + CP * dp in rank order.
//
// Expert layers see the same world as ETP x EP x EDP x PP in the same order (Megatron's second rank
// generator, with CP folded away): rank = etp + ETP * (ep + EP * (edp + EDP * pp)). gptrain forms these
// groups with ETP = TP (Megatron's default layout), which with CP = 1 splits the data-parallel index as
// dp = ep + EP * edp: an expert-model-parallel group is EP consecutive members of a DP group (same TP
// rank; they hold different experts and exchange tokens), an expert-data-parallel group the DP members
// with the same ep (they hold the same experts and reduce their gradients). EDP = DP / EP. The experts
// themselves are not split over TP (each TP rank holds its EP rank's experts whole, which is why
// --expert-tensor-parallel-size takes only 1). This file is pure
// arithmetic: communicators are built from these rank lists.
#pragma once

#include "core/config/parallel_args.h"

#include <string>
#include <vector>

namespace gptrain::parallel {

struct GridSizes {
  int tp = 1;
  int pp = 1;
  int cp = 1;  // --context-parallel-size
  int ep = 1;  // --expert-model-parallel-size: must divide DP
};

struct GridCoord {
  int tp = 0, cp = 0, dp = 0, pp = 0;
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
  int expert_dp_size() const { return dp_ / s_.ep; }
  const GridCoord& coord() const { return me_; }
  int tp_rank() const { return me_.tp; }
  int pp_rank() const { return me_.pp; }
  int dp_rank() const { return me_.dp; }
  int cp_rank() const { return me_.cp; }
  // The gradient-reduction group: DP x CP (DP alone when CP is 1), rank cp + CP * dp.
  int dp_cp_size() const { return dp_ * s_.cp; }
  int dp_cp_rank() const { return me_.cp + s_.cp * me_.dp; }
  int ep_rank() const { return me_.dp % s_.ep; }         // which slice of the experts this rank holds
  int expert_dp_rank() const { return me_.dp / s_.ep; }  // rank inside the expert-data-parallel group
  bool is_first_stage() const { return me_.pp == 0; }
  bool is_last_stage() const { return me_.pp == s_.pp - 1; }

  int rank_of(const GridCoord& c) const;
  GridCoord coord_of(int rank) const;

  // Ranks of this rank's group along one dimension, in group-rank order (the index in the list is
  // the rank inside that group). Every rank of a group computes the same list.
  std::vector<int> tp_group() const;
  std::vector<int> pp_group() const;
  std::vector<int> dp_group() const;
  std::vector<int> cp_group() const;              // the ranks that split this rank's sequences (the K/V ring)
  std::vector<int> dp_cp_group() const;           // DP x CP, cp fastest (gradients, distributed optimizer, loss sums)
  std::vector<int> model_parallel_group() const;  // TP x PP (the ranks that hold one model replica)
  // Expert layers: the EP ranks that split the experts (token all-to-all), the EDP ranks that hold the
  // same experts (gradient reduction), and the ETP x EP x PP ranks that together hold one copy of every
  // expert parameter (gradient norms), in Megatron's orders.
  std::vector<int> expert_model_parallel_group() const;
  std::vector<int> expert_data_parallel_group() const;
  std::vector<int> expert_tensor_model_pipeline_group() const;
  // First and last pipeline stage of this pipeline (one rank when PP == 1): they share the tied
  // word embeddings and all-reduce its gradient.
  std::vector<int> embedding_group() const;
  // Every group of one kind, for collective group creation (MPI_Comm_split needs one colour per rank).
  int tp_group_index() const;
  int pp_group_index() const;
  int dp_group_index() const;
  int mp_group_index() const;

  // "world 8 = TP 2 x PP 2 x DP 2; rank 5 = (tp 1, dp 0, pp 1)"; with CP > 1 "x CP 2" and "cp 1" join in; with EP > 1
  // the expert split follows: "world 8 = TP 2 x PP 1 x DP 4 (experts: EP 2 x EDP 2); rank 5 = (tp 1, dp 2, pp 0, ep 0,
  // edp 1)"
  std::string describe() const;

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
