#include "parallel/comm/grid_comms.h"

#include "core/common/error.h"
#include "kernels/backend.h"
#include "parallel/comm/mpi_communicator.h"
#include "parallel/comm/nccl_communicator.h"
#include "parallel/comm/self_communicator.h"

#include <algorithm>
#include <functional>

namespace gptrain::parallel {
namespace {

// One communicator per group of this rank; `group` makes one from a group's world ranks and name.
using MakeGroup = std::function<std::unique_ptr<Communicator>(const std::vector<int>&, const std::string&)>;
using Slot = std::unique_ptr<Communicator> GridComms::*;

struct GroupSlots {
  Slot world, tp, pp, dp, mp, embedding, ep, expert_dp, expert_mp, dp_intra, expert_dp_intra, dp_inter, cp;
};
constexpr GroupSlots kDataSlots{&GridComms::world,
                                &GridComms::tp,
                                &GridComms::pp,
                                &GridComms::dp,
                                &GridComms::mp,
                                &GridComms::embedding,
                                &GridComms::ep,
                                &GridComms::expert_dp,
                                &GridComms::expert_mp,
                                &GridComms::dp_intra,
                                &GridComms::expert_dp_intra,
                                &GridComms::dp_inter,
                                &GridComms::cp};
constexpr GroupSlots kHostSlots{&GridComms::host_world_,
                                &GridComms::host_tp_,
                                &GridComms::host_pp_,
                                &GridComms::host_dp_,
                                &GridComms::host_mp_,
                                &GridComms::host_embedding_,
                                &GridComms::host_ep_,
                                &GridComms::host_expert_dp_,
                                &GridComms::host_expert_mp_,
                                &GridComms::host_dp_intra_,
                                &GridComms::host_expert_dp_intra_,
                                &GridComms::host_dp_inter_,
                                &GridComms::host_cp_};

void make_set(const ProcessGrid& grid, const MakeGroup& group, GridComms& c, const GroupSlots& s) {
  std::vector<int> all(static_cast<std::size_t>(grid.world_size()));
  for (int i = 0; i < grid.world_size(); ++i) all[static_cast<std::size_t>(i)] = i;
  c.*s.world = group(all, "world");
  c.*s.tp = group(grid.tp_group(), "tp");
  c.*s.pp = group(grid.pp_group(), "pp");
  c.*s.dp = group(grid.dp_cp_group(), grid.cp_size() > 1 ? "dp-cp" : "dp");
  c.*s.cp = group(grid.cp_group(), "cp");
  c.*s.mp = group(grid.model_parallel_group(), "mp");
  std::vector<int> emb = grid.embedding_group();
  const bool in_emb = std::find(emb.begin(), emb.end(), grid.rank()) != emb.end();
  c.*s.embedding = group(in_emb ? emb : std::vector<int>{}, "embedding");
  c.*s.ep = group(grid.expert_model_parallel_group(), "ep");
  c.*s.expert_dp = group(grid.expert_data_parallel_group(), "expert_dp");
  c.*s.expert_mp = group(grid.expert_tensor_model_pipeline_group(), "expert_mp");
  if (grid.dist_opt_instances() > 1) {  // every rank knows N: made on all ranks or none
    c.*s.dp_intra = group(grid.intra_dp_group(), "dp_intra");
    c.*s.expert_dp_intra = group(grid.intra_expert_dp_group(), "expert_dp_intra");
    c.*s.dp_inter = group(grid.inter_dp_group(), "dp_inter");
  }
}

MakeGroup mpi_groups(const CommOptions& opts) {
  return [opts](const std::vector<int>& ranks, const std::string& name) { return make_mpi_group(ranks, name, opts); };
}

MakeGroup self_groups(const CommOptions& opts) {
  return [opts](const std::vector<int>&, const std::string& name) { return make_self_communicator(name, opts); };
}

}  // namespace

GridComms make_grid_comms(const ProcessGrid& grid, const CommOptions& opts, const std::string& transport) {
  check(transport == "mpi" || transport == "nccl" || transport == "self",
        "communicator transport '{}': expected mpi, nccl or self", transport);
  GridComms c;
  const bool host_memory = opts.staging == nullptr || std::string(opts.staging->name()) == "cpu";
  CommOptions host = opts;
  host.staging = nullptr;
  if (transport == "self") {
    check(grid.world_size() == 1, "self communicators serve a world of one process, not {}", grid.world_size());
    make_set(grid, self_groups(opts), c, kDataSlots);
    if (!host_memory) make_set(grid, self_groups(host), c, kHostSlots);
    return c;
  }
  if (transport == "mpi") {
    make_set(grid, mpi_groups(opts), c, kDataSlots);
    if (host_memory) return c;
  }
  make_set(grid, mpi_groups(host), c, kHostSlots);
  if (transport == "nccl") {
    c.world = make_nccl_group(*c.host_world_, opts);
    c.tp = make_nccl_group(*c.host_tp_, opts);
    c.pp = make_nccl_group(*c.host_pp_, opts);
    c.dp = make_nccl_group(*c.host_dp_, opts);
    c.cp = make_nccl_group(*c.host_cp_, opts);
    c.mp = make_nccl_group(*c.host_mp_, opts);
    c.ep = make_nccl_group(*c.host_ep_, opts);
    c.expert_dp = make_nccl_group(*c.host_expert_dp_, opts);
    c.expert_mp = make_nccl_group(*c.host_expert_mp_, opts);
    if (c.host_dp_intra_) {
      c.dp_intra = make_nccl_group(*c.host_dp_intra_, opts);
      c.expert_dp_intra = make_nccl_group(*c.host_expert_dp_intra_, opts);
      c.dp_inter = make_nccl_group(*c.host_dp_inter_, opts);
    }
    // Only the members of an embedding group create its NCCL communicator (collective over it).
    if (c.host_embedding_) c.embedding = make_nccl_group(*c.host_embedding_, opts);
  }
  return c;
}

CommOptions comm_options(const ParallelArgs& parallel, const BackendArgs& backend, Backend* staging) {
  CommOptions o;
  o.deterministic = backend.deterministic_mode;
  o.timeout_seconds = parallel.distributed_timeout_minutes * 60.0;
  o.staging = staging;
  return o;
}

std::string comm_transport(const ParallelArgs& parallel, const std::string& compute_backend, bool under_mpi) {
  if (!under_mpi) return "self";
  const std::string& b = parallel.distributed_backend;
  if (b == "auto") return compute_backend == "cuda" ? "nccl" : "mpi";
  if (b == "nccl")
    check(compute_backend == "cuda", "--distributed-backend nccl needs the cuda backend (got {})", compute_backend);
  return b;
}

}  // namespace gptrain::parallel
