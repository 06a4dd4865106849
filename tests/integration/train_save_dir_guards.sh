#!/usr/bin/env bash
# A run never deletes or replaces checkpoints that are not its own to replace:
# - --non-persistent-global-ckpt-dir equal to --save (its saves keep only their latest and would delete the
#   persistent ones), or inside it under a checkpoint's name, is refused at start naming both flags; one
#   equal to --load (a fine-tuning run's pretrained directory) too, the directory untouched;
# - --finetune with --load = --save (it restarts at iteration 0 and would replace the pretrained steps and
#   move the tracker back) is refused; a run that did not resume from --save refuses to replace a committed
#   iteration there at the save that would, the iteration unchanged;
# - --finetune with a missing or empty --load is an error naming the directory (not random weights), and
#   so is a --load that is a file;
# - two runs on one --save: the second is refused naming the first (host, pid); after the first is killed
#   (SIGKILL), the next run takes its stale lock over with a line naming it.
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
snapshot() { (cd "$1" && find . -type f | sort | xargs md5sum); }

# A pretrained directory: iterations 5 and 10, tracker 10.
"$bin/pretrain_gpt" "${common[@]}" --train-iters 10 --save "$tmp/pre" --save-interval 5 > "$tmp/pre.log"
snapshot "$tmp/pre" > "$tmp/pre.sum"
unchanged() { snapshot "$tmp/pre" | diff -q "$tmp/pre.sum" - > /dev/null || bad "$1: the pretrained directory changed"; }

# The non-persistent directory is the --save directory, or a checkpoint's name inside it.
np=(--non-persistent-save-interval 2 --non-persistent-ckpt-type global)
cp -r "$tmp/pre" "$tmp/same"
for d in "$tmp/same" "$tmp/same/" "$tmp/same/iter_0000004"; do
  if "$bin/pretrain_gpt" "${common[@]}" --train-iters 14 --override-opt-param-scheduler --load "$tmp/same" --save "$tmp/same" \
    --save-interval 5 \
    "${np[@]}" --non-persistent-global-ckpt-dir "$d" > "$tmp/np_same.log" 2>&1; then
    bad "--non-persistent-global-ckpt-dir $d = --save accepted"
  fi
  refused "$tmp/np_same.log" "--non-persistent-global-ckpt-dir" "--save"
done
for d in iter_0000005 iter_0000010; do [ -d "$tmp/same/$d" ] || bad "$d deleted"; done
[ "$(cat "$tmp/same/latest_checkpointed_iteration.txt")" = 10 ] || bad "the tracker moved"
# --save inside the non-persistent directory under a step's name is the same fault the other way round.
if "$bin/pretrain_gpt" "${common[@]}" --train-iters 4 --save "$tmp/npd/iter_0000002" --save-interval 5 "${np[@]}" \
  --non-persistent-global-ckpt-dir "$tmp/npd" > "$tmp/np_outer.log" 2>&1; then
  bad "--save inside the non-persistent directory as iter_0000002 accepted"
fi
refused "$tmp/np_outer.log" "--non-persistent-global-ckpt-dir" "--save"
# A directory of its own inside --save (as the default <save>/non_persistent) is fine.
"$bin/pretrain_gpt" "${common[@]}" --train-iters 4 --save "$tmp/own" --save-interval 3 "${np[@]}" \
  --non-persistent-global-ckpt-dir "$tmp/own/np" > "$tmp/np_own.log" 2>&1 || { cat "$tmp/np_own.log"; bad "own np dir"; }
[ -d "$tmp/own/iter_0000003" ] && [ -d "$tmp/own/iter_0000004" ] && [ -d "$tmp/own/np/iter_0000004" ] ||
  bad "a non-persistent directory inside --save: saves missing"

# The non-persistent directory is the --load directory of a fine-tuning run.
if "$bin/pretrain_gpt" "${common[@]}" --train-iters 4 --load "$tmp/pre" --finetune --save "$tmp/ft" --save-interval 100 \
  "${np[@]}" --non-persistent-global-ckpt-dir "$tmp/pre" > "$tmp/np_load.log" 2>&1; then
  bad "--non-persistent-global-ckpt-dir = --load accepted"
fi
refused "$tmp/np_load.log" "--non-persistent-global-ckpt-dir" "--load"
unchanged "non-persistent dir = --load"

# --finetune with --load = --save, and a fresh run whose save would replace another run's iteration.
if "$bin/pretrain_gpt" "${common[@]}" --train-iters 5 --load "$tmp/pre" --finetune --save "$tmp/pre" --save-interval 5 \
  > "$tmp/ft_same.log" 2>&1; then
  bad "--finetune with --load = --save accepted"
fi
refused "$tmp/ft_same.log" "--finetune" "--load" "--save"
unchanged "--finetune with --load = --save"
if "$bin/pretrain_gpt" "${common[@]}" --train-iters 5 --save "$tmp/pre" --save-interval 5 > "$tmp/fresh.log" 2>&1; then
  bad "a fresh run replaced iter_0000005 of another run"
fi
grep -qF "iter_0000005" "$tmp/fresh.log" && grep -q "refusing to replace" "$tmp/fresh.log" ||
  { cat "$tmp/fresh.log"; bad "no refusal naming iter_0000005"; }
unchanged "fresh run into the pretrained directory"

# --finetune with a missing or empty --load.
mkdir -p "$tmp/empty"
for d in "$tmp/missing" "$tmp/empty"; do
  if "$bin/pretrain_gpt" "${common[@]}" --train-iters 2 --load "$d" --finetune > "$tmp/ft_none.log" 2>&1; then
    bad "--finetune --load $d trained from random weights"
  fi
  refused "$tmp/ft_none.log" "--load $d" "--finetune"
done
# A file given as --load (here a tracker) started from random weights, with or without --finetune.
echo 4 > "$tmp/tracker_file.txt"
if "$bin/pretrain_gpt" "${common[@]}" --train-iters 2 --load "$tmp/tracker_file.txt" > "$tmp/load_file.log" 2>&1; then
  bad "--load of a file trained from random weights"
fi
refused "$tmp/load_file.log" "--load $tmp/tracker_file.txt: not a directory"

# Two runs on one --save: the second is refused naming the first; a killed run's lock is taken over.
"$bin/pretrain_gpt" "${common[@]}" --train-iters 1000000 --save "$tmp/shared" --save-interval 1000000 \
  > "$tmp/first.log" 2>&1 &
first=$!
for _ in $(seq 300); do grep -qE "iteration +1/" "$tmp/first.log" && break; sleep 0.1; done
if "$bin/pretrain_gpt" "${common[@]}" --train-iters 2 --save "$tmp/shared" --save-interval 1 > "$tmp/second.log" 2>&1; then
  bad "a second run on the same --save was accepted"
fi
refused "$tmp/second.log" "--save $tmp/shared" "pid $first" "$(hostname)"
kill -0 $first 2> /dev/null || bad "the first run died"
kill -9 $first && wait $first 2> /dev/null || true
"$bin/pretrain_gpt" "${common[@]}" --train-iters 2 --save "$tmp/shared" --save-interval 1 > "$tmp/third.log" 2>&1 ||
  { cat "$tmp/third.log"; bad "the run after a killed one was refused"; }
grep -q "stale lock .*pid $first" "$tmp/third.log" || { cat "$tmp/third.log"; bad "no line about the stale lock of pid $first"; }
[ -d "$tmp/shared/iter_0000002" ] || bad "the third run did not save"
[ -z "$(find "$tmp/shared" -maxdepth 1 -name '*.lock')" ] || bad "a finished run left its lock file"

[ $fails -eq 0 ] && echo "checkpoint directories guarded: overlaps refused, nothing replaced, one run per --save" ||
  { echo "$fails failure(s)"; exit 1; }
