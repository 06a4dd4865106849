#!/usr/bin/env bash
# --logging-level (Python's levels) on gptrain's log: the training log (iteration and validation lines) prints at
# every level, as Megatron prints it; 20 (the default) shows the informational lines, 30 hides them and keeps
# warnings, 40 hides warnings too; $MEGATRON_LOGGING_LEVEL stands in for the flag, and a value that is not an
# integer is refused by name. ~5 s.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
run=("$GPTRAIN_BIN/pretrain_gpt" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16
  --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 4 --lr 1e-3 --log-interval 1 --mock-data
  --vocab-size 97 --seed 3 --train-iters 2 --eval-iters 1 --rope-scaling-factor 8)
fails=0
# shows LOG: "info warn iterations validation" counts of the start-up info line, the warning, the lines.
shows() {
  echo "$(grep -c '^training 2 iterations from' "$1" || true) $(grep -c 'warning: --rope-scaling-factor has no effect' "$1" || true)" \
    "$(grep -cE ' iteration +[12]/' "$1" || true) $(grep -c '^ validation loss at' "$1" || true)"
}
check() {  # check NAME WANT ENV... -- FLAGS...
  local name=$1 want=$2
  shift 2
  env "$@" "${run[@]}" ${LEVEL:+--logging-level $LEVEL} > "$name.log" 2>&1 || { cat "$name.log"; echo "FAIL: $name: the run failed"; fails=$((fails + 1)); return; }
  got=$(shows "$name.log")
  if [ "$got" = "$want" ]; then echo "ok   $name: info warning iterations validation = $got"; else
    echo "FAIL $name: want $want, got $got"; fails=$((fails + 1)); fi
}
LEVEL= check default "1 1 2 2"
LEVEL=10 check debug "1 1 2 2"
LEVEL=30 check warning "0 1 2 2"
LEVEL=40 check error "0 0 2 2"
LEVEL= check env-warning "0 1 2 2" MEGATRON_LOGGING_LEVEL=30
LEVEL=20 check flag-over-env "1 1 2 2" MEGATRON_LOGGING_LEVEL=40
if MEGATRON_LOGGING_LEVEL=loud "${run[@]}" > bad.log 2>&1; then echo "FAIL: MEGATRON_LOGGING_LEVEL=loud taken"; fails=$((fails + 1));
elif grep -q "MEGATRON_LOGGING_LEVEL=loud: expected an integer" bad.log; then echo "ok   MEGATRON_LOGGING_LEVEL=loud refused";
else cat bad.log; echo "FAIL: no message naming MEGATRON_LOGGING_LEVEL"; fails=$((fails + 1)); fi
[ $fails -eq 0 ] && echo PASS || { echo "$fails failure(s)"; exit 1; }
