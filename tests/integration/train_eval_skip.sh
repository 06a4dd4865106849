#!/usr/bin/env bash
# Megatron's evaluation and skipping flags on a tiny mock-data run. --eval-global-batch-size sets the
# samples of each evaluation iteration (the consumed validation samples in the checkpoint count them) and
# --eval-micro-batch-size does not change the loss; --skip-train on a checkpoint trains and saves nothing
# and prints the loaded model's validation loss from the validation split's start (the same value as the
# training run's first validation of that model) and its test loss; --iterations-to-skip consumes those
# iterations' batches without training (no line, no LR step: the next LR is the unskipped run's previous
# one; "skipped samples" in the lines), and a resume across a skip prints the straight run's lines digit
# for digit. Bad eval batch sizes are refused by flag. ~8 s on 2 cores.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
source "$GPTRAIN_SRC/tests/integration/log_lines.bash"
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
run=("$GPTRAIN_BIN/pretrain_gpt" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16
     --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --min-lr 1e-3
     --lr-decay-style cosine --lr-warmup-iters 1 --mock-data --vocab-size 97 --log-interval 1 --seed 7)
meta() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' "$1" "$2"; }
vloss() { grep "validation loss at $2 |" "$1" | grep -o "lm loss value: [0-9.E+-]*"; }

# ---- evaluation batch sizes ----
"${run[@]}" --train-iters 4 --eval-interval 2 --eval-iters 1 --eval-global-batch-size 8 --save ck --save-interval 4 \
  > train.out 2>&1
[ "$(meta ck/iter_0000004/metadata.json consumed_valid_samples)" = 16 ] &&
  ok "two evaluations of --eval-global-batch-size 8 consumed 16 validation samples" ||
  bad "consumed_valid_samples $(meta ck/iter_0000004/metadata.json consumed_valid_samples), expected 16: $(tail -3 train.out)"
"${run[@]}" --train-iters 4 --eval-interval 4 --eval-iters 2 > first_eval.out 2>&1
ref=$(vloss first_eval.out "iteration 4")
for extra in "--eval-iters 2" "--eval-iters 1 --eval-global-batch-size 8" \
             "--eval-iters 1 --eval-global-batch-size 8 --eval-micro-batch-size 4"; do
  # shellcheck disable=SC2086
  "${run[@]}" --train-iters 4 --load ck --skip-train --save ck --save-interval 1 $extra > skip.out 2>&1 || true
  got=$(vloss skip.out "iteration 4 on validation set")
  if [ -n "$ref" ] && [ "$got" = "$ref" ] && grep -q "skipping training (--skip-train is on)" skip.out &&
     grep -q "validation loss at iteration 4 on test set" skip.out && ! grep -qE "iteration +[0-9]+/" skip.out; then
    ok "--skip-train $extra: the first 8 validation samples' loss ($got), no training"
  else
    bad "--skip-train $extra: '$got' vs the training run's '$ref': $(tail -5 skip.out)"
  fi
done
[ ! -e ck/iter_0000005 ] && [ "$(cat ck/latest_checkpointed_iteration.txt)" = 4 ] && ok "--skip-train saved nothing" ||
  bad "--skip-train wrote a checkpoint: $(ls ck)"
"${run[@]}" --train-iters 4 --load ck --skip-train --eval-iters 1 --eval-global-batch-size 4 > skip4.out 2>&1 || true
[ -n "$(vloss skip4.out "iteration 4 on validation set")" ] &&
  [ "$(vloss skip4.out "iteration 4 on validation set")" != "$ref" ] &&
  ok "--eval-global-batch-size 4: another loss (4 samples)" || bad "4 samples: $(tail -3 skip4.out)"
if "${run[@]}" --train-iters 4 --eval-global-batch-size 6 --eval-micro-batch-size 4 > bad.out 2>&1; then
  bad "--eval-global-batch-size 6 with --eval-micro-batch-size 4 trained"
else
  grep -q -- "--eval-global-batch-size 6 must be divisible by --eval-micro-batch-size 4" bad.out &&
    ok "an eval batch that does not divide is refused by flag" || bad "bad eval batch: $(tail -2 bad.out)"
fi

# ---- --iterations-to-skip ----
skip=(--train-iters 8 --eval-interval 4 --eval-iters 1 --iterations-to-skip 3 6)
"${run[@]}" "${skip[@]}" > straight.out 2>&1
"${run[@]}" --train-iters 8 --eval-interval 4 --eval-iters 1 > noskip.out 2>&1
lr() { grep -E "iteration +$2/" "$1" | grep -o "learning rate: [0-9.E+-]*"; }
if ! grep -qE "iteration +(3|6)/" straight.out && grep -qE "iteration +4/ +8 \| consumed samples: +16 \| skipped samples: +4 \|" straight.out &&
   grep -qE "iteration +8/ +8 \| consumed samples: +32 \| skipped samples: +8 \|" straight.out &&
   [ -n "$(lr noskip.out 3)" ] && [ "$(lr straight.out 4)" = "$(lr noskip.out 3)" ]; then
  ok "iterations 3 and 6 skipped: no lines, samples consumed and counted, no LR step"
else
  bad "--iterations-to-skip: $(grep -E 'iteration +[0-9]+/' straight.out | cut -c1-160)"
fi
"${run[@]}" "${skip[@]}" --save ck2 --save-interval 100 --exit-interval 4 > first.out 2>&1
"${run[@]}" "${skip[@]}" --load ck2 > second.out 2>&1
[ "$(meta ck2/iter_0000004/metadata.json skipped_train_samples)" = 4 ] || bad "checkpoint's skipped_train_samples"
numbers straight.out validation | grep -E "iteration +[5-8]/|at iteration 8" > straight.tail
if [ "$(wc -l < straight.tail)" -ge 4 ] && numbers second.out validation | diff straight.tail - > /dev/null; then
  ok "a resume across skipped iterations prints the straight run's lines"
else
  bad "resume differs: $(numbers second.out validation | diff straight.tail - | head -4)"
fi

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
