#!/usr/bin/env bash
# --profile on CPU: pretrain_gpt --profile --profile-step-start 2 --profile-step-end 4 prints one table of
# measured wall times per range for iterations 3..4 on each rank of --profile-ranks, with counts that
# follow from the window (2 iterations), the micro-batches per iteration and the layers
# (tests/python/profile_table_check.py): one process (4 micro-batches, an evaluation inside the window),
# then DP2 under mpirun with the default ranks (0 only), --profile-ranks 1 (1 only) and 0 1 (both).
# A window the run never reaches, or one it ends inside, is reported; bad windows and ranks outside the
# job are refused by name.
# --timing-log-level 1 and 2: after each iteration line, Megatron's "(min, max) time across ranks (ms):" block
# with the level's timers gptrain has, in Megatron's order, printed by the last rank only (DP2 gives each
# timer's min and max over both ranks), beside a --profile table; with --log-timers-to-tensorboard each as
# "<name>-time" (tests/python/timer_block_check.py). ~24 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
pg=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 2 --global-batch-size 8 --train-iters 5 --lr 1e-2 --mock-data --vocab-size 250 --log-interval 1
  --eval-interval 3 --eval-iters 1 --distributed-timeout-minutes 1 --ddp-bucket-size 2000)
prof=(--profile --profile-step-start 2 --profile-step-end 4)
check=("$GPTRAIN_PYTHON" "$GPTRAIN_SRC/tests/python/profile_table_check.py" --start 2 --end 4 --layers 2)
fail=0
# pretrain NAME NP FLAGS...: the log in $GPTRAIN_TMP/NAME.log, rank by rank (mpirun interleaves the ranks'
# output in chunks that may cut lines; per-rank files keep each rank's lines whole)
pretrain() {
  local name=$1 n=$2 out=$GPTRAIN_TMP/$1.out rc=0
  shift 2
  mpirun_n "$n" --output-filename "$out" "$GPTRAIN_BIN/pretrain_gpt" "${pg[@]}" "$@" > /dev/null 2>&1 || rc=$?
  cat "$out"/1/rank.*/stdout "$out"/1/rank.*/stderr > "$GPTRAIN_TMP/$name.log"
  [ $rc = 0 ] || { tail -20 "$GPTRAIN_TMP/$name.log"; exit 1; }
}

pretrain one 1 "${prof[@]}"
awk '/^profile of rank/ { p = 1 } p && !/^ *[a-z]/ { exit } p' "$GPTRAIN_TMP/one.log"
"${check[@]}" --log "$GPTRAIN_TMP/one.log" --ranks 0 --micro-batches 4 --evaluations 1 --eval-iters 1 || fail=1
pretrain dp2_default 2 "${prof[@]}"
"${check[@]}" --log "$GPTRAIN_TMP/dp2_default.log" --ranks 0 --micro-batches 2 --dp 2 --evaluations 1 --eval-iters 1 ||
  fail=1
pretrain dp2_rank1 2 "${prof[@]}" --profile-ranks 1
"${check[@]}" --log "$GPTRAIN_TMP/dp2_rank1.log" --ranks 1 --micro-batches 2 --dp 2 --evaluations 1 --eval-iters 1 ||
  fail=1
pretrain dp2_both 2 "${prof[@]}" --profile-ranks 0 1
"${check[@]}" --log "$GPTRAIN_TMP/dp2_both.log" --ranks 0,1 --micro-batches 2 --dp 2 --evaluations 1 --eval-iters 1 ||
  fail=1
# Without --profile: no table, no profile line; without --timing-log-level: no timer block.
pretrain off 1
if grep -q -e "profile of rank" -e "^--profile" "$GPTRAIN_TMP/off.log"; then echo "no --profile: a table: FAIL"; fail=1; fi
if grep -q "time across ranks" "$GPTRAIN_TMP/off.log"; then echo "level 0: a timer block: FAIL"; fail=1; fi

# Megatron's timers: level 1 (one process, lines at iterations 1, 2, 4), level 2 under DP2 with a profile.
timers=("$GPTRAIN_PYTHON" "$GPTRAIN_SRC/tests/python/timer_block_check.py")
level1=forward-backward,all-grads-sync,optimizer-clip-main-grad,optimizer-count-zeros,optimizer-inner-step,optimizer
pretrain timers1 1 --timing-log-level 1 --log-interval 2 --log-num-zeros-in-grad --tensorboard-dir "$GPTRAIN_TMP/tb1" \
  --log-timers-to-tensorboard
"${timers[@]}" --log "$GPTRAIN_TMP/timers1.log" --names "$level1" --lines 3 --tb "$GPTRAIN_TMP/tb1" --iterations 1,2,4 ||
  fail=1
pretrain timers2 2 --timing-log-level 2 "${prof[@]}"
"${timers[@]}" --log "$GPTRAIN_TMP/timers2.log" --lines 5 \
  --names forward-backward,all-grads-sync,optimizer-clip-main-grad,optimizer-inner-step,optimizer,batch-generator,forward-compute,backward-compute ||
  fail=1
"${check[@]}" --log "$GPTRAIN_TMP/timers2.log" --ranks 0 --micro-batches 2 --dp 2 --evaluations 1 --eval-iters 1 || fail=1

# A window past the run's end, and one the run ends inside.
pretrain late 1 --profile --profile-step-start 6 --profile-step-end 8
grep -q "rank 0 never reached iteration 7 (the run ended after iteration 5)" "$GPTRAIN_TMP/late.log" ||
  { echo "window past the end: no message: FAIL"; fail=1; }
pretrain cut 1 --profile --profile-step-start 3 --profile-step-end 9
grep -q "profile of rank 0: iterations 4..5 (2 iterations, cut short: the run ended before iteration 9)" \
  "$GPTRAIN_TMP/cut.log" || { echo "window cut short: no table: FAIL"; fail=1; }

# Refusals, naming the flag.
refused() {  # refused NP "MESSAGE" FLAGS...
  local n=$1 msg=$2
  shift 2
  if out=$(mpirun_n "$n" "$GPTRAIN_BIN/pretrain_gpt" "${pg[@]}" "$@" 2>&1); then
    echo "accepted $*: FAIL"
    fail=1
  elif ! grep -qF -- "$msg" <<< "$out"; then
    echo "$* refused without '$msg': FAIL"
    echo "$out" | tail -3
    fail=1
  fi
}
refused 1 "--profile-step-end (2) must be greater than --profile-step-start (2)" --profile --profile-step-start 2 \
  --profile-step-end 2
refused 2 "--profile-ranks: rank 2 is outside the job's ranks 0..1" --profile --profile-ranks 0 2
refused 1 "--use-pytorch-profiler" --profile --use-pytorch-profiler
refused 1 "--timing-log-level must be 0, 1 or 2 (got 3)" --timing-log-level 3
refused 1 "--timing-log-option" --timing-log-option max
[ $fail = 0 ] && echo "profile: ok"
exit $fail
