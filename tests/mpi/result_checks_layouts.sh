#!/usr/bin/env bash
# Result checks stop every rank at the same iteration, without a hang: under PP2 and DP2 (mpirun -np 2) a
# NaN loss (--lr 1e10) and --check-for-spiky-loss / --check-for-large-grads each make both ranks print the
# same "iteration N: ..." error and the job exit non-zero well within the collective timeout. ~10 s.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
M=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 32
  --micro-batch-size 2 --global-batch-size 4 --seed 7 --device cpu --mock-data --vocab-size 250 --eval-iters 0
  --clip-grad 0 --distributed-timeout-minutes 1)
W=(--train-iters 1000 --lr 10 --lr-warmup-iters 10000 --lr-decay-iters 20000 --lr-decay-style constant --log-interval 100)
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
for layout in "--pipeline-model-parallel-size 2" "--global-batch-size 8"; do
  read -ra L <<<"$layout"
  for case in nan spiky-loss large-grads; do
    case $case in
      nan) extra=(--train-iters 5 --lr 1e10 --log-interval 1) ;;
      *) extra=("${W[@]}" --check-for-$case) ;;
    esac
    start=$(date +%s)
    if mpirun_n 2 "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" "${L[@]}" "${extra[@]}" >out.log 2>&1; then
      bad "$layout $case: the job ended with rc 0"
    fi
    took=$(($(date +%s) - start))
    msgs=$(grep -oE "error: iteration [0-9]+: [a-z ]+" out.log | sort | uniq -c)
    ranks=$(grep -cE "^\[rank [01]\] fatal: .*error: iteration [0-9]+:" out.log || true)
    if [ "$ranks" != 2 ] || [ "$(echo "$msgs" | wc -l)" != 1 ] || [ $took -gt 40 ]; then
      cat out.log
      bad "$layout $case: want both ranks stopping at one iteration, quickly (got $ranks rank lines, ${took} s)"
    else
      echo "ok  $layout $case: both ranks: $(echo "$msgs" | sed 's/^ *[0-9]* //')"
    fi
  done
done
[ $fails -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
