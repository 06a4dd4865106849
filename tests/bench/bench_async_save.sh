#!/usr/bin/env bash
# The training-thread stall of a checkpoint save, synchronous vs --async-save, measured in the same
# invocation against the same run without saves. Model: 8 layers x 512 (vocabulary 50304, ~51M
# parameters; a checkpoint with Adam moments is ~0.6 GB), micro-batch 2 x seq 64, --mock-data, CPU.
# Each run trains 12 iterations and saves at 3, 6, 9 (and 12, after the measured window); the time
# from start to the log line of iteration 12 is taken for each, and the stall per save is
# (T_saving - T_no_saves) / 3. With --async-save the stall is the host copy plus the commit, and the
# background writer's competition for the cores. Numbers from a machine shared with other jobs vary: run
# alone.
#   tests/bench/bench_async_save.sh [build/bin] [scratch dir]        ~2-4 min
set -euo pipefail
bin=${1:-${GPTRAIN_BIN:-build/bin}}
scratch=${2:-${TMPDIR:-/tmp}/gptrain_bench_async_save_$$}
rm -rf "$scratch" && mkdir -p "$scratch"
trap 'rm -rf "$scratch"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-$(nproc)}
model=(--num-layers 8 --hidden-size 512 --num-attention-heads 8 --seq-length 64 --max-position-embeddings 64
       --micro-batch-size 2 --global-batch-size 2 --train-iters 12 --lr 1e-4 --mock-data --vocab-size 50257
       --hidden-dropout 0 --attention-dropout 0 --log-interval 1 --eval-iters 0 --device cpu)
# seconds from start to the iteration-12 log line
timed() {
  local t0 stamp=$scratch/stamp
  rm -f "$stamp"
  t0=$(date +%s.%N)
  "$bin/pretrain_gpt" "${model[@]}" "$@" 2>&1 | while IFS= read -r line; do
    case $line in *"iteration       12/"*) date +%s.%N > "$stamp" ;; esac
    case $line in *"saved checkpoint"*|*"started an async save"*) echo "    $line" | sed -E 's/^ +\[[^]]*\]//' >&2 ;; esac
  done
  awk -v a="$t0" -v b="$(cat "$stamp")" 'BEGIN { printf "%.2f\n", b - a }'
}
none=$(timed)
sync=$(timed --save "$scratch/sync" --save-interval 3)
async=$(timed --save "$scratch/async" --save-interval 3 --async-save)
size=$(du -sm "$scratch/sync/iter_0000003" | cut -f1)
for f in "$scratch"/sync/iter_0000003/*.safetensors; do
  cmp "$f" "$scratch/async/iter_0000003/$(basename "$f")"
done
echo "checkpoint save stall, 8 x 512 model, checkpoint of $size MB, OMP_NUM_THREADS=$OMP_NUM_THREADS, $(nproc) cores"
echo "| run                | s to iteration 12 | stall per save (s) |"
echo "|--------------------|-------------------|--------------------|"
awk -v n="$none" -v s="$sync" -v a="$async" 'BEGIN {
  printf "| no saves           | %17.2f | %18s |\n", n, "-"
  printf "| synchronous saves  | %17.2f | %18.2f |\n", s, (s - n) / 3
  printf "| --async-save       | %17.2f | %18.2f |\n", a, (a - n) / 3
  removed = (s - n > 0) ? 100 * (1 - (a - n) / (s - n)) : 0
  printf "(async removes %.0f%% of the stall; files of iteration 3 byte-identical; load average: %s)\n", removed, \
    "'"$(cut -d' ' -f1-3 /proc/loadavg)"'" }'
