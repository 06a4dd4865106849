#!/usr/bin/env bash
# Context parallelism's K/V exchange overlapped with attention on CPU ranks (bench_cp_overlap: one layer's
# context-parallel attention, forward + backward, with each ring step's transfers posted before its block is
# computed vs transfer-then-compute), for CP 2 and a few sequence lengths. Prints the time spent in the
# ring's transfer calls in each mode (waiting for the slower peer included) and the share of it overlap
# hides (1 - overlap exchange / plain exchange). MPI on one machine moves the blocks through shared memory;
# a non-blocking transfer progresses when the rank polls, so part of it still lands in the wait. Numbers
# from a machine shared with other jobs are not reliable.
#   tests/bench/bench_cp_overlap.sh [build/bin]        ~2-3 min
set -euo pipefail
bin=${1:-${GPTRAIN_BIN:-build/bin}}
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
echo "bench_cp_overlap: one layer's context-parallel attention (forward + backward), CPU ranks x 1 thread, $(nproc --all) cores, best of ${REPEAT:-5}"
echo "| CP | seq | heads | head size | batch | plain ms | plain: exchange ms | overlap ms | overlap: exchange ms | exchange hidden |"
echo "|----|-----|-------|-----------|-------|----------|--------------------|------------|----------------------|-----------------|"
for seq in 1024 2048 4096; do
  mpirun --oversubscribe --allow-run-as-root -np 2 "$bin/bench_cp_overlap" --seq "$seq" --heads 8 --head-size 64 \
    --repeat "${REPEAT:-5}"
done
