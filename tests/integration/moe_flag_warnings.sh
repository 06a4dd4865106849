#!/usr/bin/env bash
# The MoE flags Megatron ignores are not ignored silently: without --num-experts every given MoE flag warns
# that it has no effect (every MLP is dense), and so does --moe-router-pre-softmax with sigmoid scores. The
# runs go on (a Megatron script that sets them still runs), and an MoE run with the usual flags warns
# nothing. --dry-run on mock data. ~1 s.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
M=(--device cpu --mock-data --vocab-size 97 --num-layers 2 --hidden-size 32 --num-attention-heads 2 --seq-length 16
  --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 4 --train-iters 2 --lr 1e-3 --dry-run)
fail=0
run() {  # run NAME FLAGS...: stderr of a dry run that must succeed, in $GPTRAIN_TMP/err.txt
  local name=$1
  shift
  "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" "$@" > "$GPTRAIN_TMP/out.txt" 2> "$GPTRAIN_TMP/err.txt" ||
    { cat "$GPTRAIN_TMP/out.txt" "$GPTRAIN_TMP/err.txt"; echo "FAIL: $name did not run"; exit 1; }
}
expect() {  # expect NAME PATTERN: err.txt holds PATTERN
  if grep -q -- "$2" "$GPTRAIN_TMP/err.txt"; then echo "ok   $1"; else cat "$GPTRAIN_TMP/err.txt"; echo "FAIL: $1"; fail=1; fi
}
run "dense with MoE flags" --moe-router-topk 2 --moe-aux-loss-coeff 0.01 --moe-per-layer-logging
expect "--moe-router-topk without --num-experts warns" "warning.*--moe-router-topk has no effect without --num-experts"
expect "--moe-aux-loss-coeff without --num-experts warns" "--moe-aux-loss-coeff has no effect without --num-experts"
expect "--moe-per-layer-logging without --num-experts warns" "--moe-per-layer-logging has no effect without --num-experts"
run "sigmoid with pre-softmax" --disable-bias-linear --num-experts 4 --moe-router-score-function sigmoid --moe-router-pre-softmax
expect "--moe-router-pre-softmax with sigmoid scores warns" "--moe-router-pre-softmax has no effect with --moe-router-score-function sigmoid"
run "a usual MoE run" --disable-bias-linear --num-experts 4 --moe-router-topk 2 --moe-aux-loss-coeff 0.01 --moe-router-pre-softmax
if grep -q "has no effect" "$GPTRAIN_TMP/err.txt"; then
  cat "$GPTRAIN_TMP/err.txt"
  echo "FAIL: an MoE run with the usual flags warned"
  fail=1
else
  echo "ok   an MoE run with the usual flags warns nothing"
fi
exit $fail
