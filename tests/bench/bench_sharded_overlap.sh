#!/usr/bin/env bash
# Share of the data-parallel communication that overlap hides, on CPU ranks, for the distributed optimizer
# and hybrid sharding (--num-distributed-optimizer-instances): pretrain_gpt step time (ms, log line of
# iteration 15, the average of iterations 11-15) of a 4-layer 256-wide GPT (seq 64, micro-batch 4, 2
# micro-batches per rank) for
#   compute: one process with one rank's share of the batch (no communication),
#   plain:   the layout without overlap,
#   overlap: with --overlap-grad-reduce --overlap-param-gather;
# communication = plain - compute, hidden = (plain - overlap) / communication. Each configuration runs
# REPEAT times (default 3), the fastest counts. MPI progresses non-blocking collectives only when polled
# (once per backward part and forward part), and ranks that share cores have no idle core for the
# reductions, so on an oversubscribed machine little is hidden; numbers from a shared machine are not
# reliable.
#   tests/bench/bench_sharded_overlap.sh [build/bin]        ~2-5 min
set -euo pipefail
bin=${1:-${GPTRAIN_BIN:-build/bin}}
cores=$(nproc --all)
repeat=${REPEAT:-3}
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
model=(--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64
  --micro-batch-size 4 --train-iters 16 --lr 1e-4 --mock-data --vocab-size 8192 --hidden-dropout 0
  --attention-dropout 0 --log-interval 5 --eval-iters 0 --ddp-bucket-size 400000)
ms() { grep -E "iteration +15/" | sed -E 's/.*elapsed time per iteration \(ms\): ([0-9.]+).*/\1/'; }
run() {  # np flags... -> ms per iteration
  local n=$1
  shift
  if [ "$n" = 1 ]; then
    "$bin/pretrain_gpt" "${model[@]}" --global-batch-size 8 "$@" 2>&1 | ms
  else
    mpirun --oversubscribe --allow-run-as-root -np "$n" "$bin/pretrain_gpt" "${model[@]}" \
      --global-batch-size $((8 * n)) "$@" 2>&1 | ms
  fi
}
best() {
  local t b=""
  for _ in $(seq "$repeat"); do
    t=$(run "$@")
    b=$(awk -v a="$t" -v b="$b" 'BEGIN { print (b == "" || a + 0 < b + 0) ? a : b }')
  done
  echo "$b"
}
echo "pretrain_gpt on CPU ($cores cores, 1 thread per rank), 4 x 256 GPT, seq 64, 2 micro-batches of 4 per rank, best of $repeat"
echo "| layout | ranks | compute ms | plain ms | overlap ms | communication ms | hidden |"
echo "|---|---|---|---|---|---|---|"
compute=$(best 1)
row() {  # label np flags...
  local label=$1 n=$2 plain over
  shift 2
  plain=$(best "$n" "$@")
  over=$(best "$n" "$@" --overlap-grad-reduce --overlap-param-gather)
  awk -v l="$label" -v n="$n" -v c="$compute" -v p="$plain" -v o="$over" 'BEGIN {
    comm = p - c; h = comm > 0 ? (p - o) / comm : 0
    printf "| %s | %d | %.1f | %.1f | %.1f | %.1f | %.0f%% |\n", l, n, c, p, o, comm, 100 * h }'
}
row "distributed optimizer, DP 2" 2 --use-distributed-optimizer
row "hybrid, DP 2 as 2 instances of 1" 2 --use-distributed-optimizer --num-distributed-optimizer-instances 2
row "distributed optimizer, DP 4" 4 --use-distributed-optimizer
row "hybrid, DP 4 as 2 instances of 2" 4 --use-distributed-optimizer --num-distributed-optimizer-instances 2
echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
