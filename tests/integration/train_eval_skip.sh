#!/usr/bin/env bash
# Megatron's evaluation and skipping flags on a tiny mock-data run. --eval-global-batch-size sets the
# samples of each evaluation iteration (the consumed validation samples in the checkpoint count them) and
# --eval-micro-batch-size does not change the loss; --skip-train on a checkpoint trains and saves nothing
# and prints the loaded model's validation loss from the validation split's start (the same value as the
# training run's first validation of that model) and its test loss; --iterations-to-skip consumes those
# iterations' batches without training (no line, no LR step: the next LR is the unskipped run's previous
# one; "skipped samples" in the lines), and a resume across a skip prints the straight run's lines digit
# for digit (its validation continuing with --eval-global-batch-size 8). Bad eval batch sizes are refused
# by flag. --full-validation evaluates every sample of a real validation split (an odd count: the last
# micro-batch is padded) to the loss of the same samples taken one by one, also with --eval-iters 0;
# --multiple-validation-sets logs "validation-NAME loss" per --valid-data-path dataset, each equal to that
# dataset's own full validation. --start-eval-at-iter skips the evaluation points before it (the first one
# run starts at the validation split's start). ~9 s on 2 cores.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
source "$GPTRAIN_SRC/tests/integration/log_lines.bash"
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
model=("$GPTRAIN_BIN/pretrain_gpt" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16
       --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --min-lr 1e-3
       --lr-decay-style cosine --lr-warmup-iters 1 --log-interval 1 --seed 7)
run=("${model[@]}" --mock-data --vocab-size 97)
meta() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' "$1" "$2"; }
# The lm loss of the "validation$3 loss at $2" line of log $1 (empty when there is none).
vloss() { grep "validation${3:-} loss at $2 |" "$1" | grep -o "lm loss value: [0-9.E+-]*" || true; }

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

# ---- --start-eval-at-iter ----
# Evaluation points before iteration 3 (2) are not run; 4 and 6 are, the first of them from the validation
# split's start (the loss of a run whose first evaluation is at 4); the checkpoint counts two evaluations.
"${run[@]}" --train-iters 6 --eval-interval 2 --eval-iters 1 --start-eval-at-iter 3 --save ck_start \
  --save-interval 6 > start.out 2>&1 || true
"${run[@]}" --train-iters 6 --eval-interval 4 --eval-iters 1 > start_ref.out 2>&1 || true
start_ref=$(vloss start_ref.out "iteration 4")
if [ -z "$(vloss start.out "iteration 2")" ] && [ -n "$start_ref" ] && [ "$(vloss start.out "iteration 4")" = "$start_ref" ] &&
   [ -n "$(vloss start.out "iteration 6")" ] &&
   [ "$(meta ck_start/iter_0000006/metadata.json consumed_valid_samples)" = 8 ]; then
  ok "--start-eval-at-iter 3: evaluations at 4 and 6 only, the first from the split's start ($start_ref)"
else
  bad "--start-eval-at-iter 3: $(grep "validation loss at" start.out | head -4) vs '$start_ref'; consumed $(meta ck_start/iter_0000006/metadata.json consumed_valid_samples)"
fi
! "${run[@]}" --train-iters 2 --start-eval-at-iter -1 > neg.out 2>&1 &&
  grep -q -- "--start-eval-at-iter must be >= 0 (got -1)" neg.out && ok "a negative --start-eval-at-iter is refused" ||
  bad "negative --start-eval-at-iter: $(tail -2 neg.out)"

# ---- --iterations-to-skip ----
skip=(--train-iters 8 --eval-interval 4 --eval-iters 1 --eval-global-batch-size 8 --iterations-to-skip 3 6)
"${run[@]}" "${skip[@]}" > straight.out 2>&1
"${run[@]}" --train-iters 8 --eval-interval 4 --eval-iters 1 > noskip.out 2>&1
lr() { grep -E "iteration +$2/" "$1" | grep -o "learning rate: [0-9.E+-]*" || true; }
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

# ---- --full-validation, on a real dataset whose validation split does not fill whole micro-batches ----
source "$GPTRAIN_SRC/tests/integration/number_corpus.bash"
number_corpus docs
real=("${model[@]}" --data-path docs_text_document --split 70,30,0 --tokenizer-type NullTokenizer --vocab-size 96)
"${real[@]}" --train-iters 2 --save ckr --save-interval 2 --eval-iters 0 > real.out 2>&1 || bad "real-data run: $(tail -2 real.out)"
"${real[@]}" --train-iters 2 --load ckr --skip-train --full-validation --eval-iters 0 > full.out 2>&1 || true
n=$(grep -o "full validation: [0-9]* samples" full.out | grep -o "[0-9]*" | head -1 || true)
full=$(vloss full.out "iteration 2 on validation set")
# The same samples one by one: micro-batch 1, --eval-iters N batches of 1 (the split's N samples, one epoch).
"${real[@]}" --train-iters 2 --load ckr --skip-train --micro-batch-size 1 --global-batch-size 1 --eval-iters "${n:-1}" \
  > each.out 2>&1 || true
each=$(vloss each.out "iteration 2 on validation set")
if [ -n "$n" ] && [ $((n % 2)) = 1 ] && [ -n "$full" ] && [ "$full" = "$each" ]; then
  ok "--full-validation: all $n validation samples (odd: a padded micro-batch), as $n batches of one ($full)"
else
  bad "--full-validation: n='$n' '$full' vs one by one '$each': $(tail -3 full.out)"
fi
"${real[@]}" --train-iters 4 --eval-interval 2 --eval-iters 0 --full-validation > fulltrain.out 2>&1 || true
[ "$(grep -c "validation loss at iteration [24] |" fulltrain.out)" = 2 ] &&
  ok "--full-validation evaluates every --eval-interval with --eval-iters 0" ||
  bad "--full-validation in training: $(grep 'validation' fulltrain.out | head -3)"

# ---- --multiple-validation-sets: a loss per --valid-data-path dataset, each that dataset's full validation ----
cp docs.jsonl docs2.jsonl && sed -i 's/"text": "/"text": "7 7 /' docs2.jsonl
"$GPTRAIN_BIN/preprocess_data" --input docs2.jsonl --output-prefix docs2 --tokenizer-type NullTokenizer \
  --vocab-size 96 --log-interval 0 > /dev/null 2>&1
per=("${model[@]}" --train-data-path docs_text_document --tokenizer-type NullTokenizer --vocab-size 96 --train-iters 2
     --load ckr --skip-train --full-validation --eval-iters 0)
"${per[@]}" --valid-data-path 0.3 docs_text_document 0.7 docs2_text_document --multiple-validation-sets \
  --validation-set-names first second > multi.out 2>&1 || true
"${per[@]}" --valid-data-path docs_text_document > one1.out 2>&1 || true
"${per[@]}" --valid-data-path docs2_text_document > one2.out 2>&1 || true
m1=$(vloss multi.out "iteration 2 on validation set" -first)
m2=$(vloss multi.out "iteration 2 on validation set" -second)
if [ -n "$m1" ] && [ "$m1" = "$(vloss one1.out "iteration 2 on validation set")" ] && [ "$m1" != "$m2" ] &&
   [ "$m2" = "$(vloss one2.out "iteration 2 on validation set")" ]; then
  ok "--multiple-validation-sets: validation-first / validation-second, each its dataset's full validation"
else
  bad "--multiple-validation-sets: '$m1' '$m2' vs $(vloss one1.out "iteration 2 on validation set") $(vloss one2.out "iteration 2 on validation set"): $(tail -3 multi.out)"
fi
! "${per[@]}" --valid-data-path docs_text_document docs2_text_document --multiple-validation-sets \
  --validation-set-names only > names.out 2>&1 && grep -q -- "--validation-set-names gives 1 names for 2 validation" names.out &&
  ok "a wrong number of --validation-set-names is refused" || bad "names count: $(tail -2 names.out)"
! "${run[@]}" --train-iters 2 --multiple-validation-sets > nofull.out 2>&1 &&
  grep -q -- "--multiple-validation-sets needs --full-validation" nofull.out &&
  ok "--multiple-validation-sets without --full-validation is refused" || bad "no full: $(tail -2 nofull.out)"

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
