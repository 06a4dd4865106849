#!/usr/bin/env bash
# Expert parallelism's token dispatchers (alltoall, allgather): an MoE layer's experts split over EP
# ranks give the single-process outputs and gradients (mpi_moe_dispatch_check), on 1, 2, 3 and 4 ranks
# (4: one EP 4 group, two EP 2 groups, EP 2 x TP 2). ~10 s on 2 cores.
set -euo pipefail
mpirun=(mpirun --oversubscribe --allow-run-as-root)
for n in 1 2 3 4; do
  "${mpirun[@]}" -np $n "$GPTRAIN_BIN/mpi_moe_dispatch_check"
done
echo "moe_dispatch: ok"
