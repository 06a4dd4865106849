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
// with the same ep (they hold the same experts and reduce their gradients). EDP = DP / EP. With
// --expert-tensor-parallel-size = TP (the default) each expert's ffn width is split over the TP group, which is
// then the expert-tensor-parallel group; with ETP 1 (EP 1 only) every TP rank holds the experts whole. This file
// is pure arithmetic: communicators are built from these rank lists.
#pragma once

#include "core/config/parallel_args.h"

#include <string>
#include <vector>

namespace gptrain::parallel {

struct GridSizes {
  int tp = 1;
  int pp = 1;
  int cp = 1;   // --context-parallel-size
  int ep = 1;   // --expert-model-parallel-size: must divide DP (or equal TP with etp 1 and TP > 1)
  int etp = 0;  // --expert-tensor-parallel-size: TP (experts split over TP) or 1; 0: as TP (Megatron's default)
  // --num-distributed-optimizer-instances: the distributed optimizer shards inside groups of DP / N
  // consecutive DP ranks (EDP / N for routed experts) and the N groups hold replicas (hybrid sharding)
  int dist_opt_instances = 1;
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
  // ETP 1 with TP > 1 and EP > 1 (then EP = TP): Megatron's expert grid makes each TP group an EP group and
  // each DP group an expert-data-parallel group (rank = ep + EP * (edp + EDP * pp) with ep = tp, edp = dp).
  bool experts_over_tp() const { return s_.etp == 1 && s_.tp > 1 && s_.ep > 1; }
  int expert_dp_size() const { return experts_over_tp() ? dp_ : dp_ / s_.ep; }
  const GridCoord& coord() const { return me_; }
  int tp_rank() const { return me_.tp; }
  int pp_rank() const { return me_.pp; }
  int dp_rank() const { return me_.dp; }
  int cp_rank() const { return me_.cp; }
  // The gradient-reduction group: DP x CP (DP alone when CP is 1), rank cp + CP * dp.
  int dp_cp_size() const { return dp_ * s_.cp; }
  int dp_cp_rank() const { return me_.cp + s_.cp * me_.dp; }
  // Which slice of the experts this rank holds, and its rank inside the expert-data-parallel group.
  int ep_rank() const { return experts_over_tp() ? me_.tp : me_.dp % s_.ep; }
  int expert_dp_rank() const { return experts_over_tp() ? me_.dp : me_.dp / s_.ep; }
  // The DP rank (in this rank's DP group) of expert-data-parallel rank q of this rank's EDP group.
  int dp_rank_of_expert_dp(int q) const { return experts_over_tp() ? q : ep_rank() + s_.ep * q; }
  // Hybrid sharding (--num-distributed-optimizer-instances N, Megatron's partial distributed optimizer):
  // instance i is the DP ranks [i * DP/N, (i+1) * DP/N) (DP x CP ranks; CP > 1 takes N = 1 only); the optimizer shards
  // over the intra-instance group and the shards are all-reduced over the inter-instance group (same position in every
  // instance). With dp = ep + EP * edp an instance is also EDP/N consecutive expert-DP ranks for every
  // ep, so the routed experts' inter-instance group is the same one.
  int dist_opt_instances() const { return s_.dist_opt_instances; }
  int dist_opt_instance() const { return dp_cp_rank() / intra_dp_size(); }
  int intra_dp_size() const { return dp_cp_size() / s_.dist_opt_instances; }
  int intra_dp_rank() const { return dp_cp_rank() % intra_dp_size(); }
  int intra_expert_dp_size() const { return expert_dp_size() / s_.dist_opt_instances; }
  int intra_expert_dp_rank() const { return expert_dp_rank() % intra_expert_dp_size(); }
  std::vector<int> intra_dp_group() const;
  std::vector<int> intra_expert_dp_group() const;
  std::vector<int> inter_dp_group() const;
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
