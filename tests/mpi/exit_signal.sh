#!/usr/bin/env bash
# --exit-signal-handler under mpirun -np 2, DP2 and PP2: SIGTERM reaching only rank 1 during iteration 4
# still stops both ranks after iteration 4 (they agree through a collective), the checkpoint holds
# iteration 4, the job exits 0, and resuming prints the straight run's losses digit for digit. Then real
# signals: SIGTERM sent to every rank (as SLURM delivers it) and SIGUSR1 sent to mpirun (which forwards
# it; --exit-signal SIGUSR1): the job exits 0 with the checkpoint at the last iteration it logged, and
# resumes bitwise. The exit signal reaching rank 1 alone during start-up (before MPI starts, before the
# dataset index, before --load's checkpoint is read): both ranks stop at the same start-up check, exit 0,
# nothing saved. ~50 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
bin=$GPTRAIN_BIN/pretrain_gpt
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --mock-data --vocab-size 97 --log-interval 1 --seed 7
        --hidden-dropout 0.1 --eval-iters 0 --lr-decay-style constant)
source "$GPTRAIN_SRC/tests/integration/log_lines.bash"
tracker() { cat "$1/latest_checkpointed_iteration.txt"; }
fail() { echo "FAIL: $*"; exit 1; }

# resumes_bitwise DIR TRAIN_ITERS LAYOUT_FLAGS...: the run of TRAIN_ITERS saved at iteration K in DIR, resumed
# for 3 more iterations (--exit-interval), prints what a straight run prints for K+1..K+3.
resumes_bitwise() {
  local dir=$1 iters=$2 k
  shift 2
  k=$(tracker "$dir")
  local run=("${common[@]}" "$@" --train-iters "$iters" --exit-interval $((k + 3)))
  mpirun_n 2 "$bin" "${run[@]}" > "$tmp/straight.log" 2>&1 || { cat "$tmp/straight.log"; exit 1; }
  mpirun_n 2 "$bin" "${run[@]}" --load "$dir" > "$tmp/resumed.log" 2>&1 ||
    { cat "$tmp/resumed.log"; exit 1; }
  numbers "$tmp/straight.log" | tail -3 > "$tmp/straight.tail"
  numbers "$tmp/resumed.log" > "$tmp/resumed.all"
  diff "$tmp/straight.tail" "$tmp/resumed.all" || fail "resume from iteration $k ($*) differs"
  [ "$(wc -l < "$tmp/resumed.all")" = 3 ] || fail "resume from iteration $k did not run 3 iterations"
}

for layout in "" "--pipeline-model-parallel-size 2"; do
  name=${layout:+pp2}
  name=${name:-dp2}
  dir=$tmp/hook-$name
  rc=0
  mpirun_n 2 -x GPTRAIN_TEST_RAISE_SIGNAL=SIGTERM@4@1 "$bin" "${common[@]}" $layout --train-iters 10 \
    --exit-signal-handler --save "$dir" --save-interval 100 > "$tmp/$name.log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { cat "$tmp/$name.log"; fail "$name: exit code $rc after SIGTERM on rank 1"; }
  [ "$(tracker "$dir")" = 4 ] || fail "$name: tracker $(tracker "$dir"), expected 4"
  [ "$(numbers "$tmp/$name.log" | wc -l)" = 4 ] || fail "$name: the job did not stop after iteration 4"
  grep -q "exiting program at iteration 4 after receiving SIGTERM" "$tmp/$name.log"
  resumes_bitwise "$dir" 10 $layout
  echo "$name: SIGTERM on rank 1 in iteration 4 -> both ranks saved iteration 4, exit 0, bitwise resume"
done

# The exit signal on rank 1 during start-up: every rank leaves at the same check, the job exits 0.
for spec in "SIGUSR1|launch" "SIGTERM|data" "SIGTERM|load"; do
  sig=${spec%|*}
  point=${spec#*|}
  dir=$tmp/start-$point
  rm -rf "$dir" && cp -r "$tmp/hook-dp2" "$dir"
  rc=0
  mpirun_n 2 -x GPTRAIN_TEST_RAISE_SIGNAL="$sig@start:$point@1" "$bin" "${common[@]}" --train-iters 10 \
    --exit-signal-handler --exit-signal "$sig" --save "$dir" --load "$dir" --save-interval 1 > "$dir.log" 2>&1 || rc=$?
  [ "$rc" = 0 ] || { cat "$dir.log"; fail "$sig on rank 1 at start-up point $point: exit code $rc"; }
  grep -q "exiting program during start-up after receiving $sig" "$dir.log" || { cat "$dir.log"; fail "$point: no exit line"; }
  [ "$(numbers "$dir.log" | wc -l)" = 0 ] || fail "$sig at $point: iterations ran"
  [ "$(tracker "$dir")" = 4 ] && [ "$(ls "$dir" | grep -c '^iter_')" = 1 ] || fail "$sig at $point: the checkpoint changed"
  echo "$sig on rank 1 at start-up point $point: both ranks exit 0 before training, nothing saved"
done

# Real signals to a running job (the iteration is whatever it reached).
real_signal() {  # name signal-target(ranks|mpirun) signal extra flags...
  local name=$1 target=$2 sig=$3
  shift 3
  local dir=$tmp/real-$name log=$tmp/real-$name.log
  mpirun --oversubscribe --allow-run-as-root -np 2 "$bin" "${common[@]}" --train-iters 100000 --exit-signal-handler \
    --save "$dir" --save-interval 100000 "$@" > "$log" 2>&1 &
  local job=$!
  for _ in $(seq 300); do grep -q "iteration        3/" "$log" 2>/dev/null && break; sleep 0.2; done
  if [ "$target" = ranks ]; then kill -"$sig" $(pgrep -P "$job"); else kill -"$sig" "$job"; fi
  local rc=0
  wait "$job" || rc=$?
  [ "$rc" = 0 ] || { tail -20 "$log"; fail "$name: exit code $rc"; }
  local last
  last=$(numbers "$log" | tail -1 | sed -E 's/^ *iteration +([0-9]+)\/.*/\1/')
  [ "$(tracker "$dir")" = "$last" ] || fail "$name: tracker $(tracker "$dir"), last logged iteration $last"
  resumes_bitwise "$dir" 100000
  echo "$name: saved at iteration $last, exit 0, bitwise resume"
}
real_signal sigterm-to-ranks ranks TERM
real_signal sigusr1-to-mpirun mpirun USR1 --exit-signal SIGUSR1
echo "exit_signal: ok"
