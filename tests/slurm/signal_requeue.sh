#!/usr/bin/env bash
# scripts/slurm/pretrain_gpt.sbatch under a real SLURM (a one-node cluster of this machine, cluster.bash):
# 2 tasks started by srun (MPI through PMIx) train a tiny model on the CPU with --exit-signal-handler.
# 1. The job, submitted with --signal=TERM@300 and --requeue, is brought within 300 s of its time limit
#    once it trains (scontrol update TimeLimit): slurmctld sends the pre-timeout SIGTERM to every task,
#    the ranks finish the iteration, save it and the job ends COMPLETED with exit code 0:0, the log naming
#    the iteration; the checkpoint holds that iteration.
# 2. `scontrol requeue` runs the same job again: it loads that checkpoint, continues from the next
#    iteration and is stopped by `scancel --signal=TERM` (every task of every step, as the pre-timeout
#    signal) some iterations later, again saving and ending with 0:0.
# 3. A second job of the same command (its own checkpoint directory) runs uninterrupted past that
#    iteration: its log lines and its --metrics-file records (losses, grad norms, learning rates in full
#    precision) equal those of the two runs of the first job bit for bit.
# ~2-3 min on 2 cores (most of it waiting for slurmctld's 30 s time-limit check and training to reach it).
set -euo pipefail
source "$(dirname "$0")/cluster.bash"
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*"; exit 1; }

start_cluster 2
# The sbatch script's GPTRAIN_BIN is the program (the test's is the build's bin directory).
export GPTRAIN_BIN=$GPTRAIN_BIN/pretrain_gpt OMP_NUM_THREADS=1

train=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
       --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --mock-data --vocab-size 97 --log-interval 1
       --seed 7 --hidden-dropout 0.1 --eval-iters 0 --lr-decay-style constant --train-iters 100000
       --exit-signal-handler --save-interval 100000)
# Command-line overrides of the script's #SBATCH lines (2 nodes x 8 GPUs): one node, two CPU tasks.
resources=(--nodes=1 --ntasks=2 --ntasks-per-node=2 --cpus-per-task=1 --gpus-per-node=0 --time=30)

job_field() { scontrol show job -o "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
iterations() {  # iteration lines of a log without the wall-clock parts (none while the log is not there)
  grep -sE "iteration +[0-9]+/" "$1" |
    sed -E 's/^ \[[^]]*\]//; s/elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ tokens per second: [0-9.]+ \|//'
}
# exact_metrics FILE: the --metrics-file records (full-precision losses, grad norms, learning rates; the
# requeued run appends to the first run's file) without the wall-clock fields.
exact_metrics() { sed -E 's/"(elapsed_ms_per_iteration|time|tokens_per_second|throughput_tflops_per_gpu)":[^,}]*,?//g' "$1"; }
last_iteration() { iterations "$1" | tail -1 | sed -E 's/^ *iteration +([0-9]+)\/.*/\1/'; }
logged_past() { [ "$(last_iteration "$1")" -ge "$2" ] 2>/dev/null; }
job_state_is() { [ "$(job_field "$1" JobState)" = "$2" ]; }
job_ended() { case "$(job_field "$1" JobState)" in COMPLETED|FAILED|TIMEOUT|CANCELLED|NODE_FAIL|OUT_OF_MEMORY) return 0 ;; esac; return 1; }
show_job() { scontrol show job "$1"; tail -n 30 "$2"; }

# wait_logged JOB LOG ITER: the job trains and has logged iteration ITER (10 min at most, 2 cores busy).
wait_logged() {
  local deadline=$((SECONDS + 600))
  until logged_past "$2" "$3"; do
    job_ended "$1" && { show_job "$1" "$2"; fail "job $1 ended before logging iteration $3"; }
    [ "$SECONDS" -lt "$deadline" ] || { show_job "$1" "$2"; fail "job $1 did not log iteration $3 in 600 s"; }
    sleep 0.5
  done
}
# ended_ok JOB LOG: the job ends COMPLETED with exit code 0:0 after the signal (10 min at most).
ended_ok() {
  wait_for 600 "job $1 to end" job_ended "$1" || { show_job "$1" "$2"; fail "job $1 still running"; }
  job_state_is "$1" COMPLETED && [ "$(job_field "$1" ExitCode)" = 0:0 ] ||
    { show_job "$1" "$2"; fail "job $1 ended $(job_field "$1" JobState) with exit code $(job_field "$1" ExitCode)"; }
}
# saved_at LOG CKPT: the log's last iteration K, after which the job said it stopped on SIGTERM and saved K.
saved_at() {
  local k
  k=$(last_iteration "$1")
  grep -q "exiting program at iteration $k after receiving SIGTERM" "$1" || { tail -n 20 "$1"; fail "$1: no exit on SIGTERM at iteration $k"; }
  grep -qE "saved checkpoint at iteration +$k to " "$1" || { tail -n 20 "$1"; fail "$1: no save of iteration $k"; }
  [ "$(cat "$2/latest_checkpointed_iteration.txt")" = "$k" ] || fail "$2: tracker $(cat "$2/latest_checkpointed_iteration.txt"), expected $k"
  [ -d "$2/iter_$(printf %07d "$k")" ] || fail "$2: no iter_$(printf %07d "$k")"
  echo "$k"
}

# 1. The pre-timeout signal. Submitted from the scratch directory, not the checkout: the script finds it.
cd "$tmp"
ckpt=$tmp/ckpt
job=$(sbatch --parsable "${resources[@]}" --signal=TERM@300 --requeue --output="$tmp/job-%j.out" \
  "$GPTRAIN_SRC/scripts/slurm/pretrain_gpt.sbatch" "${train[@]}" --save "$ckpt" --load "$ckpt" \
  --metrics-file "$tmp/metrics-job.jsonl")
log=$tmp/job-$job.out
echo "job $job submitted"
wait_logged "$job" "$log" 3
grep -q "no latest_checkpointed_iteration.txt; starting from random initialization" "$log" || fail "the first run did not start from scratch"
# Within 300 s of the limit at slurmctld's next time-limit check, yet 240+ s from it: time to save.
start=$(date -d "$(job_field "$job" StartTime)" +%s)
limit=$(( ($(date +%s) - start) / 60 + 5 ))
scontrol update JobId="$job" TimeLimit="$limit"
echo "job $job: iteration $(last_iteration "$log") logged; time limit set to $limit min: SIGTERM due within 300 s of it"
ended_ok "$job" "$log"
mv "$log" "$tmp/run1.log"  # the requeued run writes a new one
k1=$(saved_at "$tmp/run1.log" "$ckpt")
echo "run 1: pre-timeout SIGTERM -> stopped and saved at iteration $k1, job COMPLETED 0:0"

# 2. Requeue: the same job runs again, resumes from k1, and is signalled after 3 more iterations.
scontrol requeue "$job"
# Slurm makes a requeued job eligible 2 minutes later (EligibleTime); a test need not wait for that.
scontrol update JobId="$job" StartTime=now
wait_logged "$job" "$log" $((k1 + 3))
[ "$(job_field "$job" Restarts)" = 1 ] || fail "job $job: Restarts=$(job_field "$job" Restarts), expected 1"
scancel --signal=TERM "$job"
ended_ok "$job" "$log"
mv "$log" "$tmp/run2.log"
grep -qE "loaded checkpoint .* at iteration $k1\b" "$tmp/run2.log" || { tail -n 30 "$tmp/run2.log"; fail "the requeued run did not load iteration $k1"; }
first=$(iterations "$tmp/run2.log" | sed -n 1p | sed -E 's/^ *iteration +([0-9]+)\/.*/\1/')
[ "$first" = $((k1 + 1)) ] || fail "the requeued run's first iteration is $first, expected $((k1 + 1))"
k2=$(saved_at "$tmp/run2.log" "$ckpt")
echo "run 2 (requeued, Restarts=1): resumed at iteration $((k1 + 1)), SIGTERM -> saved at iteration $k2, COMPLETED 0:0"

# 3. The same command uninterrupted, to iteration k2 and beyond.
ref=$(sbatch --parsable "${resources[@]}" --output="$tmp/ref-%j.out" \
  "$GPTRAIN_SRC/scripts/slurm/pretrain_gpt.sbatch" "${train[@]}" --save "$tmp/ckpt-ref" --load "$tmp/ckpt-ref" \
  --metrics-file "$tmp/metrics-ref.jsonl")
wait_logged "$ref" "$tmp/ref-$ref.out" "$k2"
scancel --signal=TERM "$ref"
ended_ok "$ref" "$tmp/ref-$ref.out"
iterations "$tmp/ref-$ref.out" | sed -n "1,${k2}p" > "$tmp/straight"
{ iterations "$tmp/run1.log"; iterations "$tmp/run2.log"; } > "$tmp/interrupted"
[ "$(wc -l < "$tmp/interrupted")" = "$k2" ] || fail "the two runs logged $(wc -l < "$tmp/interrupted") iterations, expected $k2"
diff "$tmp/straight" "$tmp/interrupted" > "$tmp/diff" || { head -n 20 "$tmp/diff"; fail "interrupted and requeued log lines differ from the uninterrupted run"; }
exact_metrics "$tmp/metrics-ref.jsonl" | sed -n "1,${k2}p" > "$tmp/straight.jsonl"
exact_metrics "$tmp/metrics-job.jsonl" > "$tmp/interrupted.jsonl"
[ "$(wc -l < "$tmp/interrupted.jsonl")" = "$k2" ] || fail "metrics-job.jsonl has $(wc -l < "$tmp/interrupted.jsonl") records, expected $k2"
diff "$tmp/straight.jsonl" "$tmp/interrupted.jsonl" > "$tmp/diff" ||
  { head -n 6 "$tmp/diff"; fail "interrupted and requeued metrics differ from the uninterrupted run"; }
echo "iterations 1..$k2 (stopped at $k1, requeued, stopped at $k2): log lines and full-precision losses, grad norms and"
echo "learning rates equal the uninterrupted job's bit for bit"
echo "signal_requeue: ok"
