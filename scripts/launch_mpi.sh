#!/usr/bin/env bash
# launch_mpi.sh — start a gptrain program (pretrain_gpt by default) on one or many nodes with Open MPI.
# Each rank is bound to one GPU by its local rank (CUDA_VISIBLE_DEVICES), gets OMP_NUM_THREADS =
# cores per rank, and receives every argument after `--` unchanged. Ranks read their rank/local
# rank/world from OMPI_COMM_WORLD_* (or PMI_*/SLURM_* under other launchers). With --preflight an
# all-reduce bandwidth check (gptrain_preflight) runs first over the same processes. Start-up takes
# seconds; the run takes what the program takes.
#
#   scripts/launch_mpi.sh -n 8 -- --tensor-model-parallel-size 2 ...            # one node, 8 GPUs
#   scripts/launch_mpi.sh -n 16 -H node1:8,node2:8 --preflight -- ...           # two nodes
#   scripts/launch_mpi.sh -n 16 --hostfile hosts.txt --bin build/bin/pretrain_gpt -- ...
#   GPTRAIN_MPIRUN_ARGS="--mca btl_tcp_if_include ib0" scripts/launch_mpi.sh ...  # extra mpirun flags
#
# Options: -n N ranks (required) | -H host:slots,... | --hostfile F | --gpus-per-node G (default: GPUs
# seen by nvidia-smi, 0 = CPU run, no binding) | --bin PATH | --preflight | --dry-run (print the command).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

# Per-rank wrapper (mpirun starts this script again in this mode): bind the GPU, then exec.
if [ "${1:-}" = "--rank-wrapper" ]; then
  shift
  local_rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${MPI_LOCALRANKID:-${SLURM_LOCALID:-0}}}
  gpus=${GPTRAIN_GPUS_PER_NODE:-0}
  if [ "$gpus" -gt 0 ] && [ -z "${GPTRAIN_KEEP_VISIBLE_DEVICES:-}" ]; then
    export CUDA_VISIBLE_DEVICES=$((local_rank % gpus))
  fi
  exec "$@"
fi

np="" hosts="" hostfile="" bin="$root/build/bin/pretrain_gpt" preflight=0 dry=0
gpus=${GPTRAIN_GPUS_PER_NODE:-}
while [ $# -gt 0 ]; do
  case "$1" in
    -n|-np) np=$2; shift 2 ;;
    -H|--host) hosts=$2; shift 2 ;;
    --hostfile) hostfile=$2; shift 2 ;;
    --gpus-per-node) gpus=$2; shift 2 ;;
    --bin) bin=$2; shift 2 ;;
    --preflight) preflight=1; shift ;;
    --dry-run) dry=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "launch_mpi.sh: unknown option $1 (program flags go after --)" >&2; exit 2 ;;
  esac
done
[ -n "$np" ] || { echo "launch_mpi.sh: -n N (number of ranks) is required" >&2; exit 2; }
[ -x "$bin" ] || command -v "$bin" > /dev/null || { echo "launch_mpi.sh: $bin is not an executable (build first: scripts/setup.sh)" >&2; exit 2; }
if [ -z "$gpus" ]; then
  gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
fi

# Ranks per node: from -H slots when given, else all on this node.
per_node=$np
if [ -n "$hosts" ]; then
  per_node=$(tr ',' '\n' <<<"$hosts" | awk -F: 'NR == 1 { print ($2 == "" ? 1 : $2) }')
fi
cores=$(nproc)
threads=$(( cores / per_node )); [ "$threads" -ge 1 ] || threads=1

cmd=(mpirun -np "$np")
[ -n "$hosts" ] && cmd+=(-H "$hosts")
[ -n "$hostfile" ] && cmd+=(--hostfile "$hostfile")
[ "$(id -u)" = 0 ] && cmd+=(--allow-run-as-root)
[ "$np" -gt "$cores" ] && [ -z "$hosts$hostfile" ] && cmd+=(--oversubscribe)
cmd+=(--bind-to none -x "OMP_NUM_THREADS=${OMP_NUM_THREADS:-$threads}" -x "GPTRAIN_GPUS_PER_NODE=$gpus" -x PATH)
[ -n "${LD_LIBRARY_PATH:-}" ] && cmd+=(-x LD_LIBRARY_PATH)
for v in $(env | grep -oE '^(NCCL|CUDA|GPTRAIN)_[A-Za-z0-9_]*' || true); do cmd+=(-x "$v"); done
# shellcheck disable=SC2206
extra=(${GPTRAIN_MPIRUN_ARGS:-})
cmd+=("${extra[@]}")

run() {  # run [exec] COMMAND...: print it (--dry-run), or run it (with exec: in place of this script)
  if [ "$dry" = 1 ]; then
    [ "$1" = exec ] && shift
    printf '%q ' "$@"
    echo
  else
    "$@"
  fi
}
if [ "$preflight" = 1 ]; then
  # The preflight of the same build as the program (--bin may name another build directory).
  pre=$(dirname "$(command -v "$bin")")/gptrain_preflight
  [ -x "$pre" ] || pre=$root/build/bin/gptrain_preflight
  run "${cmd[@]}" "$0" --rank-wrapper "$pre" --size-mb 64 --iters 5
fi
# mpirun takes this script's place, so that a signal sent to it reaches mpirun, which forwards SIGUSR1
# and SIGUSR2 to the ranks (SLURM's --signal=B:USR1@N signals the batch script, which exec'd this one).
run exec "${cmd[@]}" "$0" --rank-wrapper "$bin" "$@"
