#!/usr/bin/env bash
# --bf16-stochastic-rounding under parallel layouts: the rounding bits are keyed by each weight's index in
# its global tensor, so DP2 (distributed optimizer: state and updates sharded), TP2 and PP2 print the single
# process's losses within 1e-6 relative over 10 iterations, while the rounding itself moves them by more
# than that (against the fp32-master run). A DP2 checkpoint resumes in one process: iterations 6-10 within
# 1e-6 of the straight single-process run. ~20 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
base=(--train-iters 10 --global-batch-size 8 --micro-batch-size 2 --num-layers 2 --distributed-timeout-minutes 1)
common=("${base[@]}" --bf16-stochastic-rounding)
fail=0
train_check "$GPTRAIN_TMP/one.log" 1
check() {  # check NAME LOG
  local e
  e=$(max_rel_err "$GPTRAIN_TMP/one.log" "$2")
  echo "$1 vs one process: max rel loss err $e"
  awk -v e="$e" 'BEGIN { exit !(e <= 1e-6) }' || { echo "FAIL: $1"; fail=1; }
}
train_check "$GPTRAIN_TMP/dp.log" 2 --use-distributed-optimizer
check "DP2 (distributed optimizer)" "$GPTRAIN_TMP/dp.log"
train_check "$GPTRAIN_TMP/tp.log" 2 --tensor-model-parallel-size 2
check "TP2" "$GPTRAIN_TMP/tp.log"
train_check "$GPTRAIN_TMP/pp.log" 2 --pipeline-model-parallel-size 2
check "PP2" "$GPTRAIN_TMP/pp.log"
common=("${base[@]}")
train_check "$GPTRAIN_TMP/master.log" 1
d=$(max_rel_err "$GPTRAIN_TMP/one.log" "$GPTRAIN_TMP/master.log")
echo "one process, fp32 masters vs stochastic rounding: $d"
awk -v d="$d" 'BEGIN { exit !(d > 1e-6) }' || { echo "FAIL: stochastic rounding had no effect"; fail=1; }
common=("${base[@]}" --bf16-stochastic-rounding)
# Save at DP2 after iteration 5, resume in one process.
train_check "$GPTRAIN_TMP/first.log" 2 --use-distributed-optimizer --save "$GPTRAIN_TMP/ck" --save-at 5 --train-iters 5
train_check "$GPTRAIN_TMP/resumed.log" 1 --load "$GPTRAIN_TMP/ck"
e=$(max_rel_err "$GPTRAIN_TMP/one.log" "$GPTRAIN_TMP/resumed.log" 6)
echo "DP2 checkpoint resumed in one process, iterations 6-10: max rel loss err $e"
awk -v e="$e" 'BEGIN { exit !(e <= 1e-6) }' || { echo FAIL; fail=1; }
exit $fail
