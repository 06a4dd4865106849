#!/usr/bin/env bash
# --squared-relu, --init-method-xavier-uniform and --embedding-init-method-std under TP 2 and PP 2 (mpirun -np 2,
# untied output layer, dropout 0): the per-iteration losses equal the single process's (2e-6 relative: the
# printed digits), so every layout draws the same Xavier/embedding init and computes the same activation,
# and the flags change the losses of the run without them. A checkpoint saved with --squared-relu is refused
# by a --load without the flag (and the reverse), naming it, before any iteration. ~10 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/pretrain_gpt
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --untie-embeddings-and-output-weights --hidden-dropout 0 --attention-dropout 0 --micro-batch-size 2
  --global-batch-size 4 --train-iters 4 --lr 1e-2 --mock-data --vocab-size 250 --log-interval 1 --eval-iters 0
  --seed 7 --distributed-timeout-minutes 1)
switches=(--squared-relu --init-method-xavier-uniform --embedding-init-method-std 0.5)
losses() { sed -E -n 's/.*iteration +([0-9]+)\/.*lm loss: ([0-9.E+-]+).*/\1 \2/p' "$1"; }
max_err() {  # ref out -> max relative difference; fails on a missing iteration
  awk 'NR == FNR { ref[$1] = $2; n++; next } ($1 in ref) { seen++; e = ($2 - ref[$1]) / ref[$1]; if (e < 0) e = -e; if (e > m) m = e }
    END { if (n < 4 || seen != n) { print "missing iterations" > "/dev/stderr"; exit 1 } printf "%.3e\n", m + 0 }' \
    <(losses "$1") <(losses "$2")
}
"$bin" "${common[@]}" "${switches[@]}" --save "$GPTRAIN_TMP/relu2" --save-interval 4 > "$GPTRAIN_TMP/single.log" 2>&1 ||
  { tail -20 "$GPTRAIN_TMP/single.log"; exit 1; }
"$bin" "${common[@]}" --save "$GPTRAIN_TMP/gelu" --save-interval 4 > "$GPTRAIN_TMP/plain.log" 2>&1 ||
  { tail -20 "$GPTRAIN_TMP/plain.log"; exit 1; }
fail=0
err=$(max_err "$GPTRAIN_TMP/plain.log" "$GPTRAIN_TMP/single.log")
ok=$(awk -v e="$err" 'BEGIN { print (e > 1e-3) ? "ok" : "FAIL" }')
echo "the switches change the losses: max rel difference $err $ok"
[ "$ok" = ok ] || fail=1
for flags in "--tensor-model-parallel-size 2" "--pipeline-model-parallel-size 2"; do
  # shellcheck disable=SC2086
  mpirun_n 2 "$bin" "${common[@]}" "${switches[@]}" $flags > "$GPTRAIN_TMP/par.log" 2>&1 ||
    { tail -20 "$GPTRAIN_TMP/par.log"; exit 1; }
  err=$(max_err "$GPTRAIN_TMP/single.log" "$GPTRAIN_TMP/par.log")
  ok=$(awk -v e="$err" 'BEGIN { print (e <= 2e-6) ? "ok" : "FAIL" }')
  printf 'np=2 %-36s max rel loss err %s %s\n' "$flags" "$err" "$ok"
  [ "$ok" = ok ] || fail=1
done
expect_refusal() {  # name want log -- command...: the command must fail with `want` in its output
  local name=$1 want=$2 log=$GPTRAIN_TMP/$3
  shift 4
  if "$@" > "$log" 2>&1; then echo "FAIL: $name: the mismatched load was accepted"; exit 1; fi
  grep -q -- "$want" "$log" || { echo "FAIL: $name: no '$want' in:"; tail -5 "$log"; exit 1; }
  if grep -q " iteration " "$log"; then echo "FAIL: $name: trained before refusing"; exit 1; fi
  echo "ok: $name: $(grep -m1 -o "the checkpoint's model .*" "$log")"
}
expect_refusal "--squared-relu checkpoint, run without it" "squared_relu true; give --squared-relu" a.log -- \
  "$bin" "${common[@]}" --load "$GPTRAIN_TMP/relu2" --finetune
expect_refusal "GELU checkpoint, run with --squared-relu" "squared_relu false, this run has --squared-relu" b.log -- \
  "$bin" "${common[@]}" --squared-relu --load "$GPTRAIN_TMP/gelu" --finetune
exit $fail
