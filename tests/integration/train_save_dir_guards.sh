#!/usr/bin/env bash
# A run never deletes or replaces checkpoints that are not its own to replace, nor fine-tunes nothing:
# - --finetune with a missing or empty --load is an error naming the directory (not random weights).
# ~5 s on 2 cores.
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --mock-data --vocab-size 97 --seed 7 --eval-iters 0)
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
# refused LOG WANT... : the last run failed, without training, its error holding every WANT.
refused() {
  local log=$1
  shift
  grep -qE "iteration +1/" "$log" && bad "$log: trained before refusing"
  for want in "$@"; do grep -qF -- "$want" "$log" || { bad "$log: the error does not say '$want'"; cat "$log"; }; done
}

# --finetune with a missing or empty --load.
mkdir -p "$tmp/empty"
for d in "$tmp/missing" "$tmp/empty"; do
  if "$bin/pretrain_gpt" "${common[@]}" --train-iters 2 --load "$d" --finetune > "$tmp/ft_none.log" 2>&1; then
    bad "--finetune --load $d trained from random weights"
  fi
  refused "$tmp/ft_none.log" "--load $d" "--finetune"
done

[ $fails -eq 0 ] && echo "checkpoint directories guarded" ||
  { echo "$fails failure(s)"; exit 1; }
