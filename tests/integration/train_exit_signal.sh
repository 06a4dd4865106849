#!/usr/bin/env bash
# Signals (Megatron's --exit-signal-handler / --exit-signal) and --save-retain-interval, one process.
# - with the handler, SIGTERM during iteration 4 finishes it, saves iter_0000004, exits 0; resuming gives
#   the straight run's iterations 5..10 digit for digit; --exit-signal SIGUSR1 likewise;
# - without it, SIGTERM kills the run (143) but never inside a save: SIGTERM at the start of the save
#   of iteration 6 lets that checkpoint finish (tracker 6, loadable, no temporaries) before dying;
# - --save-retain-interval 4 with saves every 2 keeps iter 4, 8 and the latest, deletes 2, 6, never a
#   directory gptrain did not write;
# - the exit signal during start-up (before MPI starts, before the dataset index, before the model, before
#   --load's checkpoint is read) ends the run with code 0 before its first iteration, saving nothing; without
#   the handler SIGTERM then still kills it (143).
# ~20 s on 2 cores.
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 4 --train-iters 10 --lr 1e-2 --min-lr 1e-3 --lr-warmup-iters 2
        --lr-decay-style cosine --mock-data --vocab-size 97 --log-interval 1 --seed 7 --hidden-dropout 0.1
        --eval-iters 0)
source "$GPTRAIN_SRC/tests/integration/log_lines.bash"
tracker() { cat "$1/latest_checkpointed_iteration.txt"; }
expect_rc() {  # expected actual what
  [ "$1" = "$2" ] || { echo "FAIL: $3: exit code $2, expected $1"; exit 1; }
}

"$bin/pretrain_gpt" "${common[@]}" > "$tmp/straight.log"

# 1. --exit-signal-handler: SIGTERM in iteration 4 -> checkpoint at 4, rc 0, bitwise resume.
rc=0
GPTRAIN_TEST_RAISE_SIGNAL=SIGTERM@4 "$bin/pretrain_gpt" "${common[@]}" --exit-signal-handler \
  --save "$tmp/a" --save-interval 100 > "$tmp/a1.log" 2>&1 || rc=$?
expect_rc 0 "$rc" "SIGTERM with --exit-signal-handler"
[ "$(tracker "$tmp/a")" = 4 ] || { echo "FAIL: tracker $(tracker "$tmp/a"), expected 4"; exit 1; }
grep -q "exiting program at iteration 4 after receiving SIGTERM" "$tmp/a1.log"
[ "$(numbers "$tmp/a1.log" | wc -l)" = 4 ] || { echo "FAIL: the signalled run did not stop after iteration 4"; exit 1; }
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/a" > "$tmp/a2.log"
numbers "$tmp/straight.log" | grep -E "iteration +([5-9]|10)/" > "$tmp/straight.tail"
numbers "$tmp/a2.log" | diff "$tmp/straight.tail" - || { echo "FAIL: resume after SIGTERM differs"; exit 1; }

# 2. --exit-signal SIGUSR1: the named signal is the one waited for.
rc=0
GPTRAIN_TEST_RAISE_SIGNAL=SIGUSR1@3 "$bin/pretrain_gpt" "${common[@]}" --exit-signal-handler --exit-signal SIGUSR1 \
  --save "$tmp/b" --save-interval 100 > "$tmp/b.log" 2>&1 || rc=$?
expect_rc 0 "$rc" "SIGUSR1 with --exit-signal SIGUSR1"
[ "$(tracker "$tmp/b")" = 3 ]
# ... and SIGINT is then not graceful: the default action (130).
rc=0
GPTRAIN_TEST_RAISE_SIGNAL=SIGINT@3 "$bin/pretrain_gpt" "${common[@]}" --exit-signal-handler --exit-signal SIGUSR1 \
  --save "$tmp/c" --save-interval 100 > "$tmp/c.log" 2>&1 || rc=$?
expect_rc 130 "$rc" "SIGINT while waiting for SIGUSR1"
[ ! -e "$tmp/c/latest_checkpointed_iteration.txt" ]

# 3. No handler: SIGTERM ends the run at once (143) ...
rc=0
GPTRAIN_TEST_RAISE_SIGNAL=SIGTERM@4 "$bin/pretrain_gpt" "${common[@]}" --save "$tmp/d" --save-interval 3 \
  > "$tmp/d.log" 2>&1 || rc=$?
expect_rc 143 "$rc" "SIGTERM without the handler"
[ "$(tracker "$tmp/d")" = 3 ]
# ... except inside a save: it waits for the checkpoint to be complete.
rc=0
GPTRAIN_TEST_RAISE_SIGNAL=SIGTERM@save6 "$bin/pretrain_gpt" "${common[@]}" --save "$tmp/e" --save-interval 3 \
  > "$tmp/e.log" 2>&1 || rc=$?
expect_rc 143 "$rc" "SIGTERM during a save"
[ "$(tracker "$tmp/e")" = 6 ] || { echo "FAIL: SIGTERM during the save of 6 left tracker $(tracker "$tmp/e")"; exit 1; }
leftovers=$(find "$tmp/e" -mindepth 1 -maxdepth 1 -name '.*')
[ -z "$leftovers" ] || { echo "FAIL: temporaries left: $leftovers"; exit 1; }
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/e" > "$tmp/e2.log"
numbers "$tmp/straight.log" | grep -E "iteration +([7-9]|10)/" > "$tmp/straight.tail7"
numbers "$tmp/e2.log" | diff "$tmp/straight.tail7" - || { echo "FAIL: resume from the save SIGTERM waited for"; exit 1; }

# 4. --save-retain-interval 4, saves every 2: iter 4, 8 and the latest (10) stay.
mkdir -p "$tmp/f/iter_0000001" && echo keep > "$tmp/f/iter_0000001/notes.txt"  # not a gptrain checkpoint
"$bin/pretrain_gpt" "${common[@]}" --save "$tmp/f" --save-interval 2 --save-retain-interval 4 > "$tmp/f.log"
left=$(cd "$tmp/f" && ls -a | grep -v '^\.\.\?$' | tr '\n' ' ')
[ "$left" = "iter_0000001 iter_0000004 iter_0000008 iter_0000010 latest_checkpointed_iteration.txt " ] ||
  { echo "FAIL: --save-retain-interval left: $left"; exit 1; }
grep -q "deleted checkpoint iteration 6 (--save-retain-interval)" "$tmp/f.log"
# Not a multiple of --save-interval: refused by name.
rc=0
"$bin/pretrain_gpt" "${common[@]}" --save "$tmp/g" --save-interval 2 --save-retain-interval 3 > "$tmp/g.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && grep -q -- "--save-retain-interval 3 must be a multiple of --save-interval 2" "$tmp/g.log"
# 5. The exit signal during start-up: exit 0 at the next start-up check, no iteration, nothing saved.
for point in launch data model load; do
  for sig in SIGTERM SIGUSR1; do
    dir=$tmp/start-$point-$sig
    rm -rf "$dir" && cp -r "$tmp/a" "$dir"  # a checkpoint at iteration 4 for --load
    rc=0
    GPTRAIN_TEST_RAISE_SIGNAL=$sig@start:$point "$bin/pretrain_gpt" "${common[@]}" --exit-signal-handler \
      --exit-signal "$sig" --save "$dir" --load "$dir" --save-interval 1 > "$dir.log" 2>&1 || rc=$?
    expect_rc 0 "$rc" "$sig at start-up point $point"
    grep -q "exiting program during start-up after receiving $sig (--exit-signal-handler): no iteration was trained, nothing to save" \
      "$dir.log" || { cat "$dir.log"; echo "FAIL: $sig at $point: no start-up exit line"; exit 1; }
    [ "$(numbers "$dir.log" | wc -l)" = 0 ] || { echo "FAIL: $sig at $point: iterations ran"; exit 1; }
    [ "$(tracker "$dir")" = 4 ] && [ "$(ls "$dir" | grep -c '^iter_')" = 1 ] ||
      { echo "FAIL: $sig at $point: the checkpoint directory changed"; exit 1; }
  done
done
# Without the handler, a SIGTERM before MPI starts kills the run as it always did.
rc=0
GPTRAIN_TEST_RAISE_SIGNAL=SIGTERM@start:launch "$bin/pretrain_gpt" "${common[@]}" > "$tmp/start-nohandler.log" 2>&1 || rc=$?
expect_rc 143 "$rc" "SIGTERM at start-up without the handler"
echo "train_exit_signal: ok"
