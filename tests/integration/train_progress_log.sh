#!/usr/bin/env bash
# --log-progress: <save>/progress.txt in Megatron's format. A run saving at iterations 2 and 4 writes "Starting job"
# and one "Saved checkpoint" line per save (iteration, job and cumulative TFLOP/s/GPU, the run's floating-point
# operations so far = iterations x the model FLOPs per iteration of the start-up line, tokens in billions); a
# resume to iteration 6 (SLURM_JOB_ID set) appends its own lines, its FLOPs counting on from the checkpoint's; with
# --async-save a save logs "Saving async checkpoint" then "Saved async checkpoint" when it commits, and
# --save-retain-interval's deletions "Deleted checkpoint". Without the flag there is no progress.txt. ~4 s.
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --mock-data --vocab-size 97 --log-interval 1 --eval-iters 0
  --seed 7 --save-interval 2)
fail() { echo "FAIL: $*"; [ -f "$tmp/ck/progress.txt" ] && cat "$tmp/ck/progress.txt"; exit 1; }
unset SLURM_JOB_ID
"$bin/pretrain_gpt" "${common[@]}" --train-iters 4 --save "$tmp/plain" > "$tmp/plain.log"
[ ! -e "$tmp/plain/progress.txt" ] || fail "progress.txt written without --log-progress"
"$bin/pretrain_gpt" "${common[@]}" --train-iters 4 --save "$tmp/ck" --log-progress > "$tmp/a.log"
SLURM_JOB_ID=77 "$bin/pretrain_gpt" "${common[@]}" --train-iters 6 --save "$tmp/ck" --load "$tmp/ck" --log-progress --override-opt-param-scheduler \
  > "$tmp/b.log"
per_iter=$(sed -nE 's/.*TFLOP\/s count ([0-9.e+]+) model FLOPs per iteration.*/\1/p' "$tmp/a.log")
[ -n "$per_iter" ] || fail "no FLOPs per iteration in the start-up line"
T='[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}'
S=$'Saved checkpoint\tIteration: ([0-9]+)\tJob throughput: [0-9]+\\.[0-9] TFLOP/s/GPU\tCumulative throughput: [0-9]+\\.[0-9] TFLOP/s/GPU\tFloating-point operations: ([0-9]\\.[0-9]{2}e[+-][0-9]{2})\tTokens \\(in billions\\): 0\\.00'
want=("^$T"$'\tJob ID: \t# GPUs: 1\tStarting job$' "^$T"$'\tJob ID: \t# GPUs: 1\t'"$S\$" "^$T"$'\tJob ID: \t# GPUs: 1\t'"$S\$"
  "^$T"$'\tJob ID: 77\t# GPUs: 1\tStarting job$' "^$T"$'\tJob ID: 77\t# GPUs: 1\t'"$S\$")
[ "$(wc -l < "$tmp/ck/progress.txt")" = ${#want[@]} ] || fail "want ${#want[@]} lines"
for i in "${!want[@]}"; do
  line=$(sed -n "$((i + 1))p" "$tmp/ck/progress.txt")
  [[ $line =~ ${want[$i]} ]] || fail "line $((i + 1)) does not read as Megatron's: '$line'"
  if [[ $line == *"Saved checkpoint"* ]]; then
    it=${BASH_REMATCH[1]} flops=${BASH_REMATCH[2]}
    awk -v f="$flops" -v n="$it" -v p="$per_iter" 'BEGIN { e = f / (n * p) - 1; exit !(e < 0.01 && e > -0.01) }' ||
      fail "iteration $it: $flops floating-point operations, want $it x $per_iter"
  fi
done
echo "ok   progress.txt: $(cut -f4- "$tmp/ck/progress.txt" | cut -c1-40 | tr '\n' ';')"

# --async-save and --save-retain-interval.
"$bin/pretrain_gpt" "${common[@]}" --train-iters 4 --save "$tmp/as" --log-progress --async-save --save-interval 1 \
  --save-retain-interval 2 > "$tmp/as.log"
events=$(cut -f4- "$tmp/as/progress.txt" | sed -E 's/\tJob throughput.*//' | tr '\t' ' ' | tr '\n' ';')
want_events="Starting job;Saving async checkpoint Iteration: 1;Saved async checkpoint Iteration: 1;"
want_events+="Saving async checkpoint Iteration: 2;Saved async checkpoint Iteration: 2;Deleted checkpoint Iteration: 1;"
want_events+="Saving async checkpoint Iteration: 3;Saved async checkpoint Iteration: 3;"
want_events+="Saving async checkpoint Iteration: 4;Saved async checkpoint Iteration: 4;Deleted checkpoint Iteration: 3;"
[ "$events" = "$want_events" ] || { echo "got:  $events"; echo "want: $want_events"; fail "async save events"; }
echo "ok   --async-save / --save-retain-interval events: $events"
