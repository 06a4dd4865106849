#!/usr/bin/env bash
# DP2 training step time of pretrain_gpt on CPU (mpirun -np 2, OMP_NUM_THREADS=1 per rank) with and
# without --overlap-grad-reduce, for a 4-layer 256-wide GPT (~3.4M parameters, seq 64, micro-batch 4,
# 2 micro-batches per rank) and a few --ddp-bucket-size values; prints the ratio
# overlap / plain. On CPU, MPI's non-blocking collectives progress only when polled (once per layer
# of backward), so the gain is bounded by what is left to reduce after the last layer; on GPUs NCCL
# runs them on their own stream. Each run trains 16 iterations and reports the log line of iteration
# 15 (average of iterations 11-15). Numbers from a machine shared with other jobs are not reliable.
#   tests/bench/bench_dp_overlap.sh [build/bin]        ~2-4 min
set -euo pipefail
bin=${1:-${GPTRAIN_BIN:-build/bin}}
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
echo "pretrain_gpt DP2 on CPU (2 ranks x 1 thread, $(nproc) cores), 4 x 256 GPT, seq 64, 2 micro-batches of 4 per rank"
echo "| --ddp-bucket-size | plain ms/step | overlap ms/step | overlap / plain |"
echo "|-------------------|---------------|-----------------|-----------------|"
for bucket in 100000 400000 40000000; do
  plain=$(run "$bucket")
  over=$(run "$bucket" --overlap-grad-reduce)
  awk -v b="$bucket" -v p="$plain" -v o="$over" 'BEGIN { printf "| %17d | %13.1f | %15.1f | %15.3f |\n", b, p, o, o / p }'
done
echo "(load average: $(cut -d' ' -f1-3 /proc/loadavg))"
