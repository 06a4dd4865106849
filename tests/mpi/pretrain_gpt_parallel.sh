#!/usr/bin/env bash
# pretrain_gpt under mpirun: the training loop (core/train) with ParallelRunner prints the same
# per-iteration "lm loss" (and validation loss) as the single process at TP2 x PP2, DP2 with the
# distributed optimizer, and TP2 + sequence parallel, with the default hidden and attention dropout 0.1
# (printed values agree to 2e-6 relative: they have 7 significant digits); checkpoints saved at TP2 x PP2
# and at DP2 resume in one process with the losses of the uninterrupted run (the dropout stream counts
# every DP rank's micro-batches). The iteration and validation lines (with their dash frames) come from one rank,
# unprefixed, byte for byte the single process's once the timestamp, timings and loss/norm digits are
# masked; the last rank prints the memory plan of every pipeline stage. ~45 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/pretrain_gpt
common=(--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 2 --global-batch-size 8 --train-iters 8 --lr 1e-2 --mock-data --vocab-size 250 --log-interval 1
  --eval-interval 4 --eval-iters 1 --seed 7 --distributed-timeout-minutes 1)
# "K X" per training iteration and "vK X" per validation line.
losses() {
  sed -E -n -e 's/.*iteration +([0-9]+)\/.*lm loss: ([0-9.E+-]+).*/\1 \2/p' \
    -e 's/.*validation loss at iteration ([0-9]+)( on ([a-z]+) set)? \| lm loss value: ([0-9.E+-]+).*/v\1\3 \4/p' "$1"
}
# The training log's own lines with run-dependent numbers masked.
log_shape() {
  grep -E '^ \[[0-9-]+ [0-9:.]+\] iteration |^ validation loss at |^-+$' "$1" | sed -E \
    -e 's/^ \[[0-9-]+ [0-9:.]+\]/ [TIME]/' -e 's/(elapsed time per iteration \(ms\)|tokens per second): [0-9.]+/\1: X/g' \
    -e 's/(lm loss|grad norm|lm loss value|lm loss PPL): [0-9.E+-]+/\1: X/g'
}
check_log_lines() {  # single.log par.log flags
  local n
  n=$(log_shape "$1" | grep -c ' iteration ' || true)
  [ "$n" -ge 8 ] || { echo "log lines: only $n iteration lines in the single-process log"; return 1; }
  if ! diff <(log_shape "$1") <(log_shape "$2") > "$GPTRAIN_TMP/shape.diff"; then
    echo "log lines under mpirun ($3) differ from the single process's:"; head -20 "$GPTRAIN_TMP/shape.diff"; return 1
  fi
  if grep -E '^\[rank [0-9]+\] .*( iteration +[0-9]+/| validation loss at )' "$2"; then
    echo "log lines under mpirun ($3) carry a rank prefix"; return 1
  fi
}
compare() {  # ref out first_iteration -> max relative difference, fails on a missing line
  awk -v first="$3" 'NR == FNR { k = $1; sub(/^v/, "", k); if (k + 0 >= first) ref[$1] = $2; next }
    ($1 in ref) { seen[$1] = 1; e = $2 - ref[$1]; if (e < 0) e = -e; e /= ref[$1]; if (e > m) m = e }
    END { for (k in ref) if (!(k in seen)) { print "missing " k > "/dev/stderr"; exit 1 } printf "%.3e\n", m + 0 }' \
    <(losses "$1") <(losses "$2")
}
"$bin" "${common[@]}" > "$GPTRAIN_TMP/single.log"
[ "$(losses "$GPTRAIN_TMP/single.log" | wc -l)" -ge 8 ] || { echo "no loss lines in the single-process log"; exit 1; }
fail=0
for spec in "4|--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2" "2|--use-distributed-optimizer" \
  "2|--tensor-model-parallel-size 2 --sequence-parallel"; do
  n=${spec%%|*}
  flags=${spec#*|}
  # shellcheck disable=SC2086
  mpirun_n "$n" "$bin" "${common[@]}" $flags > "$GPTRAIN_TMP/par.log" 2>&1 || { tail -20 "$GPTRAIN_TMP/par.log"; exit 1; }
  err=$(compare "$GPTRAIN_TMP/single.log" "$GPTRAIN_TMP/par.log" 1)
  ok=$(awk -v e="$err" 'BEGIN { print (e <= 2e-6) ? "ok" : "FAIL" }')
  printf 'pretrain_gpt np=%s %-70s max rel loss err %s %s\n' "$n" "$flags" "$err" "$ok"
  [ "$ok" = ok ] || fail=1
  check_log_lines "$GPTRAIN_TMP/single.log" "$GPTRAIN_TMP/par.log" "$flags" || fail=1
  # shellcheck disable=SC2086
  stages=$(awk -v f="$flags" 'BEGIN { n = split(f, a, " "); for (i = 1; i < n; ++i) if (a[i] == "--pipeline-model-parallel-size") { print a[i + 1]; exit } print 1 }')
  plans=$(grep -c '^pretrain_gpt: memory plan, pipeline stage [0-9]* of '"$stages"' (per rank' "$GPTRAIN_TMP/par.log" || true)
  [ "$plans" = "$stages" ] || { echo "expected $stages memory plan lines, found $plans"; fail=1; }
done
[ "$fail" != 0 ] || echo "log lines under mpirun: unprefixed, single-process format, from one rank"

# Save at TP2 x PP2 (and at DP2) after iteration 4, resume in one process.
for spec in "4|TP2xPP2|--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2" "2|DP2|"; do
  IFS='|' read -r n name flags <<< "$spec"
  rm -rf "$GPTRAIN_TMP/ck"
  # shellcheck disable=SC2086
  mpirun_n "$n" "$bin" "${common[@]}" $flags --save "$GPTRAIN_TMP/ck" --save-interval 4 --exit-interval 4 \
    > "$GPTRAIN_TMP/first.log" 2>&1 || { tail -20 "$GPTRAIN_TMP/first.log"; exit 1; }
  "$bin" "${common[@]}" --load "$GPTRAIN_TMP/ck" > "$GPTRAIN_TMP/resumed.log" 2>&1 || { tail -20 "$GPTRAIN_TMP/resumed.log"; exit 1; }
  err=$(compare "$GPTRAIN_TMP/single.log" "$GPTRAIN_TMP/resumed.log" 5)
  ok=$(awk -v e="$err" 'BEGIN { print (e <= 2e-6) ? "ok" : "FAIL" }')
  printf 'pretrain_gpt %s checkpoint -> 1 process, iterations 5-8: max rel loss err %s %s\n' "$name" "$err" "$ok"
  [ "$ok" = ok ] || fail=1
done
exit $fail
