#include "parallel/launch/launch_env.h"

#include "core/common/error.h"

#include <algorithm>
#include <cstdlib>

namespace gptrain::parallel {
namespace {

std::optional<int> int_var(const EnvLookup& env, const char* name) {
  std::optional<std::string> v = env(name);
  if (!v || v->empty()) return std::nullopt;
  std::size_t used = 0;
  int x = 0;
  try {
    x = std::stoi(*v, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  check(used == v->size() && x >= 0, "environment variable {}={} is not a non-negative integer", name, *v);
  return x;
}

struct Launcher {
  const char* source;
  const char* rank;
  const char* size;
  const char* local_rank[2];
  const char* local_size[2];
};

constexpr Launcher kLaunchers[] = {
    {"openmpi",
     "OMPI_COMM_WORLD_RANK",
     "OMPI_COMM_WORLD_SIZE",
     {"OMPI_COMM_WORLD_LOCAL_RANK", nullptr},
     {"OMPI_COMM_WORLD_LOCAL_SIZE", nullptr}},
    {"pmi", "PMI_RANK", "PMI_SIZE", {"MPI_LOCALRANKID", "PMI_LOCAL_RANK"}, {"MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"}},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", {"SLURM_LOCALID", nullptr}, {"SLURM_NTASKS_PER_NODE", nullptr}},
    {"torchrun", "RANK", "WORLD_SIZE", {"LOCAL_RANK", nullptr}, {"LOCAL_WORLD_SIZE", nullptr}},
};

std::optional<int> first_of(const EnvLookup& env, const char* const (&names)[2]) {
  for (const char* n : names) {
    if (n == nullptr) continue;
    if (std::optional<int> v = int_var(env, n)) return v;
  }
  return std::nullopt;
}

// This node's entry of SLURM's tasks-per-node list, a compressed list with one entry per node ("3(x2),1":
// 3 on nodes 0 and 1, 1 on node 2), at SLURM_NODEID. srun sets SLURM_STEP_TASKS_PER_NODE for every step;
// SLURM_NTASKS_PER_NODE is there only when the job asked for --ntasks-per-node.
std::optional<int> slurm_tasks_on_this_node(const EnvLookup& env) {
  std::optional<std::string> list = env("SLURM_STEP_TASKS_PER_NODE");
  if (!list) list = env("SLURM_NTASKS_PER_NODE");
  if (!list) return std::nullopt;
  int node = int_var(env, "SLURM_NODEID").value_or(0);
  std::size_t at = 0;
  while (at < list->size()) {
    const std::size_t end = std::min(list->find(',', at), list->size());
    const std::string entry = list->substr(at, end - at);
    const std::size_t x = entry.find("(x");
    const int repeats = x == std::string::npos ? 1 : std::atoi(entry.c_str() + x + 2);
    if (node < repeats) return std::max(1, std::atoi(entry.c_str()));
    node -= repeats;
    at = end + 1;
  }
  return std::nullopt;
}

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

LaunchEnv discover_launch_env(const EnvLookup& env) {
  for (const Launcher& l : kLaunchers) {
    std::optional<int> rank = int_var(env, l.rank);
    std::optional<int> size = int_var(env, l.size);
    if (!rank || !size) continue;
    LaunchEnv e;
    e.source = l.source;
    e.rank = *rank;
    e.world_size = *size;
    check(e.world_size >= 1 && e.rank < e.world_size, "{}: {}={} is not below {}={}", l.source, l.rank, e.rank, l.size,
          e.world_size);
    e.local_rank = first_of(env, l.local_rank).value_or(0);
    if (std::string(l.source) == "slurm") {
      e.local_size = slurm_tasks_on_this_node(env).value_or(1);
    } else {
      e.local_size = first_of(env, l.local_size).value_or(1);
    }
    e.local_size = std::max(e.local_size, e.local_rank + 1);
    return e;
  }
  LaunchEnv single;
  single.source = "single";
  return single;
}

LocalDevice choose_local_device(const LaunchEnv& env, int visible_devices) {
  check(visible_devices >= 1, "{} launch, local rank {}: no GPU is visible to this process (CUDA_VISIBLE_DEVICES?)",
        env.source, env.local_rank);
  LocalDevice d;
  d.index = env.local_rank % visible_devices;
  d.shared = env.local_size > visible_devices;
  return d;
}

}  // namespace gptrain::parallel
