#!/usr/bin/env bash
# DP2 training step time of pretrain_gpt on CPU (mpirun -np 2, OMP_NUM_THREADS=1 per rank) with and
# without --overlap-grad-reduce, for a 4-layer 256-wide GPT (~5.3M parameters with its 8192-token
# vocabulary, seq 64, micro-batch 4, 2 micro-batches per rank) and a few --ddp-bucket-size values;
# prints the ratio overlap / plain. On CPU, MPI's non-blocking collectives progress only when polled
# (once per layer of backward), and with two ranks on two cores there is no idle core for the
# reduction to use, so little gain is expected here; on GPUs NCCL runs them on their own stream. Each
# run trains 16 iterations and reports the log line of iteration 15 (average of iterations 11-15);
# each configuration runs REPEAT times (default 3) and the fastest counts. Numbers from a machine
# shared with other jobs are not reliable.
#   tests/bench/bench_dp_overlap.sh [build/bin]        ~3-6 min
set -euo pipefail
bin=${1:-${GPTRAIN_BIN:-build/bin}}
cores=$(nproc --all)
repeat=${REPEAT:-3}
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive
run() {  # bucket_elems extra-flags... -> ms per iteration
  local bucket=$1
  shift
  mpirun --oversubscribe --allow-run-as-root -np 2 "$bin/pretrain_gpt" --num-layers 4 --hidden-size 256 \
    --num-attention-heads 4 --seq-length 64 --max-position-embeddings 64 --micro-batch-size 4 \
    --global-batch-size 16 --train-iters 16 --lr 1e-4 --mock-data --vocab-size 8192 --hidden-dropout 0 \
    --attention-dropout 0 --log-interval 5 --eval-iters 0 --ddp-bucket-size "$bucket" "$@" 2>&1 |
    grep -E "iteration +15/" | sed -E 's/.*elapsed time per iteration \(ms\): ([0-9.]+).*/\1/'
}
best() {  # the fastest of $repeat runs
  local t b=""
  for _ in $(seq "$repeat"); do
    t=$(run "$@")
    b=$(awk -v a="$t" -v b="$b" 'BEGIN { print (b == "" || a + 0 < b + 0) ? a : b }')
  done
  echo "$b"
}
echo "pretrain_gpt DP2 on CPU (2 ranks x 1 thread, $cores cores), 4 x 256 GPT, seq 64, 2 micro-batches of 4 per rank, best of $repeat"
echo "| optimizer             | --ddp-bucket-size | plain ms/step | overlap ms/step | overlap / plain |"
echo "|-----------------------|-------------------|---------------|-----------------|-----------------|"
row() {  # label bucket flags-of-both -- overlap flags
  local label=$1 bucket=$2 plain over
  shift 2
  local both=() more=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do both+=("$1"); shift; done
  shift
  more=("$@")
  plain=$(best "$bucket" "${both[@]}")
  over=$(best "$bucket" "${both[@]}" "${more[@]}")
  awk -v l="$label" -v b="$bucket" -v p="$plain" -v o="$over" \
    'BEGIN { printf "| %-21s | %17d | %13.1f | %15.1f | %15.3f |\n", l, b, p, o, o / p }'
}
for bucket in 100000 400000 40000000; do
  row "AdamW (replicated)" "$bucket" -- --overlap-grad-reduce
done
row "distributed + gather" 400000 --use-distributed-optimizer -- --overlap-grad-reduce --overlap-param-gather
echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
