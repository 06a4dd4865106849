#!/usr/bin/env bash
# scripts/slurm/pretrain_gpt.sbatch under a real SLURM (a one-node cluster of this machine, cluster.bash):
# jobs of 2 tasks train a tiny model on the CPU with --exit-signal-handler, with the script's #SBATCH
# lines overridden on the command line (one node, no GPUs).
# 0. srun --ntasks=2 alone: both ranks see 2 tasks on their node (SLURM_STEP_TASKS_PER_NODE).
# 1. srun (MPI through PMIx): the job, submitted with --signal=TERM@300 and --requeue, is brought within
#    300 s of its time limit once it trains (scontrol update TimeLimit); slurmctld sends the pre-timeout
#    SIGTERM to every task, the ranks finish the iteration, save it and the job ends COMPLETED with exit
#    code 0:0, its log naming the iteration; the checkpoint holds that iteration.
# 2. `scontrol requeue` runs the same job again: it loads that checkpoint, continues from the next
#    iteration and is stopped by `scancel --signal=TERM` (every task of every step, as the pre-timeout
#    signal) some iterations later, again saving and ending with 0:0.
# 3. mpirun inside the allocation (GPTRAIN_LAUNCHER=mpirun): a job-step signal would reach no rank (on
#    one node mpirun starts them itself, outside any step), so --signal=B:USR1@300 goes to the batch
#    script, which mpirun replaced, and mpirun forwards it (--exit-signal SIGUSR1): saved, 0:0.
# 4. A job of the same command (its own checkpoint directory) runs uninterrupted past those iterations:
#    its log lines and --metrics-file records (losses, grad norms, learning rates in full precision)
#    equal those of the two runs of the first job and of the mpirun job bit for bit.
# ~1.5-2 min on 2 cores, ~3 min beside a second copy (mostly waiting for slurmctld's time-limit check,
# every 30 s).
set -euo pipefail
source "$(dirname "$0")/cluster.bash"
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*"; exit 1; }

start_cluster 2
# srun without --ntasks-per-node: each rank still learns how many tasks share its node (the step's list).
out=$(timeout 300 srun --ntasks=2 --mpi=pmix "$GPTRAIN_BIN/gptrain_preflight" --size-mb 1 --iters 1 2>&1) || { echo "$out"; fail "srun"; }
[ "$(grep -cE "launch slurm: local rank [01] of 2;" <<<"$out")" = 2 ] || { echo "$out"; fail "srun: local ranks not 0 and 1 of 2"; }
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
# exact_metrics FILE: the --metrics-file records (full-precision losses, grad norms, learning rates; a
# resumed run appends to the file) without the wall-clock fields.
exact_metrics() { sed -E 's/"(elapsed_ms_per_iteration|time|tokens_per_second|throughput_tflops_per_gpu)":[^,}]*,?//g' "$1"; }
iteration_of() { sed -E 's/^ *iteration +([0-9]+)\/.*/\1/'; }
last_iteration() { iterations "$1" | tail -1 | iteration_of; }
logged_past() { [ "$(last_iteration "$1")" -ge "$2" ] 2>/dev/null; }
job_state_is() { [ "$(job_field "$1" JobState)" = "$2" ]; }
job_ended() { case "$(job_field "$1" JobState)" in COMPLETED|FAILED|TIMEOUT|CANCELLED|NODE_FAIL|OUT_OF_MEMORY) return 0 ;; esac; return 1; }
show_job() {  # the job, and its log without the iteration lines but the last
  scontrol show job "$1"
  grep -vE "iteration +[0-9]+/" "$2" | tail -n 25
  grep -E "iteration +[0-9]+/" "$2" | tail -n 1
}

# submit OUTPUT SBATCH_FLAGS... -- TRAIN_FLAGS...: the job id of pretrain_gpt.sbatch with the train flags.
submit() {
  local out=$1 flags=()
  shift
  while [ "$1" != -- ]; do flags+=("$1"); shift; done
  shift
  sbatch --parsable "${resources[@]}" "${flags[@]}" --output="$out" "$GPTRAIN_SRC/scripts/slurm/pretrain_gpt.sbatch" \
    "${train[@]}" "$@"
}
# wait_logged JOB LOG ITER: the job trains and has logged iteration ITER (10 min at most, 2 cores busy).
wait_logged() {
  local deadline=$((SECONDS + 600))
  until logged_past "$2" "$3"; do
    job_ended "$1" && { show_job "$1" "$2"; fail "job $1 ended before logging iteration $3"; }
    [ "$SECONDS" -lt "$deadline" ] || { show_job "$1" "$2"; fail "job $1 did not log iteration $3 in 600 s"; }
    sleep 0.5
  done
}
# near_time_limit JOB LOG: once the job trains, its time limit is set 240-300 s ahead, so that slurmctld's
# next time-limit check (every 30 s) sends the job's --signal=...@300 with minutes left to save.
near_time_limit() {
  wait_logged "$1" "$2" 3
  local start limit
  start=$(date -d "$(job_field "$1" StartTime)" +%s)
  limit=$(( ($(date +%s) - start) / 60 + 5 ))
  scontrol update JobId="$1" TimeLimit="$limit"
  echo "job $1: iteration $(last_iteration "$2") logged; time limit set to $limit min"
}
# ended_ok JOB LOG: the job ends COMPLETED with exit code 0:0 after the signal (10 min at most).
ended_ok() {
  wait_for 600 "job $1 to end" job_ended "$1" || { show_job "$1" "$2"; fail "job $1 still running"; }
  job_state_is "$1" COMPLETED && [ "$(job_field "$1" ExitCode)" = 0:0 ] ||
    { show_job "$1" "$2"; fail "job $1 ended $(job_field "$1" JobState) with exit code $(job_field "$1" ExitCode)"; }
}
# saved_at LOG CKPT SIGNAL: the log's last iteration K, after which the job said it stopped on SIGNAL and
# saved K; the checkpoint's tracker names K.
saved_at() {
  local k
  k=$(last_iteration "$1")
  grep -q "exiting program at iteration $k after receiving $3" "$1" || { tail -n 20 "$1"; fail "$1: no exit on $3 at iteration $k"; }
  grep -qE "saved checkpoint at iteration +$k to " "$1" || { tail -n 20 "$1"; fail "$1: no save of iteration $k"; }
  [ "$(cat "$2/latest_checkpointed_iteration.txt")" = "$k" ] || fail "$2: tracker $(cat "$2/latest_checkpointed_iteration.txt"), expected $k"
  [ -d "$2/iter_$(printf %07d "$k")" ] || fail "$2: no iter_$(printf %07d "$k")"
  echo "$k"
}
# same_as_ref WHAT LOG METRICS K: iterations 1..K of LOG and METRICS are the uninterrupted job's, bit for bit.
same_as_ref() {
  iterations "$2" > "$tmp/got"
  [ "$(wc -l < "$tmp/got")" = "$4" ] || fail "$1 logged $(wc -l < "$tmp/got") iterations, expected $4"
  iterations "$ref_log" | sed -n "1,$4p" | diff - "$tmp/got" > "$tmp/diff" ||
    { head -n 6 "$tmp/diff"; fail "$1: log lines differ from the uninterrupted job's"; }
  exact_metrics "$3" > "$tmp/got"
  [ "$(wc -l < "$tmp/got")" = "$4" ] || fail "$3 has $(wc -l < "$tmp/got") records, expected $4"
  exact_metrics "$tmp/metrics-ref.jsonl" | sed -n "1,$4p" | diff - "$tmp/got" > "$tmp/diff" ||
    { head -n 6 "$tmp/diff"; fail "$1: metrics differ from the uninterrupted job's"; }
  echo "$1, iterations 1..$4: log lines and full-precision losses, grad norms, learning rates equal the uninterrupted job's"
}

# 1. srun, the pre-timeout SIGTERM. Submitted from the scratch directory, not the checkout.
cd "$tmp"
ckpt=$tmp/ckpt
job=$(submit "$tmp/job-%j.out" --signal=TERM@300 --requeue -- --save "$ckpt" --load "$ckpt" --metrics-file "$tmp/metrics-job.jsonl")
log=$tmp/job-$job.out
near_time_limit "$job" "$log"
grep -q "no latest_checkpointed_iteration.txt; starting from random initialization" "$log" || fail "the first run did not start from scratch"
ended_ok "$job" "$log"
mv "$log" "$tmp/run1.log"  # the requeued run writes a new one
k1=$(saved_at "$tmp/run1.log" "$ckpt" SIGTERM)
echo "run 1 (srun): pre-timeout SIGTERM -> stopped and saved at iteration $k1, job COMPLETED 0:0"

# 2. Requeue: the same job runs again, resumes from k1, and is signalled after 3 more iterations.
scontrol requeue "$job"  # eligible again once its credentials expired: cred_expire=10 (cluster.bash)
wait_logged "$job" "$log" $((k1 + 3))
[ "$(job_field "$job" Restarts)" = 1 ] || fail "job $job: Restarts=$(job_field "$job" Restarts), expected 1"
scancel --signal=TERM "$job"
ended_ok "$job" "$log"
mv "$log" "$tmp/run2.log"
grep -qE "loaded checkpoint .* at iteration $k1\b" "$tmp/run2.log" || { tail -n 30 "$tmp/run2.log"; fail "the requeued run did not load iteration $k1"; }
first=$(iterations "$tmp/run2.log" | sed -n 1p | iteration_of)
[ "$first" = $((k1 + 1)) ] || fail "the requeued run's first iteration is $first, expected $((k1 + 1))"
k2=$(saved_at "$tmp/run2.log" "$ckpt" SIGTERM)
echo "run 2 (requeued, Restarts=1): resumed at iteration $((k1 + 1)), SIGTERM -> saved at iteration $k2, COMPLETED 0:0"

# 3. mpirun inside the allocation, the pre-timeout SIGUSR1 to the batch script.
mp=$(submit "$tmp/mpirun-%j.out" --export=ALL,GPTRAIN_LAUNCHER=mpirun --signal=B:USR1@300 -- \
  --exit-signal SIGUSR1 --save "$tmp/ckpt-mpirun" --metrics-file "$tmp/metrics-mpirun.jsonl")
mp_log=$tmp/mpirun-$mp.out
near_time_limit "$mp" "$mp_log"
grep -q "launch openmpi" "$mp_log" || fail "job $mp: the ranks were not started by mpirun"
ended_ok "$mp" "$mp_log"
k3=$(saved_at "$mp_log" "$tmp/ckpt-mpirun" SIGUSR1)
echo "mpirun job: pre-timeout SIGUSR1 to the batch script -> forwarded, saved at iteration $k3, COMPLETED 0:0"

# 4. The same command uninterrupted, past both.
ref=$(submit "$tmp/ref-%j.out" -- --save "$tmp/ckpt-ref" --load "$tmp/ckpt-ref" --metrics-file "$tmp/metrics-ref.jsonl")
ref_log=$tmp/ref-$ref.out
wait_logged "$ref" "$ref_log" $((k2 > k3 ? k2 : k3))
scancel --signal=TERM "$ref"
ended_ok "$ref" "$ref_log"
cat "$tmp/run1.log" "$tmp/run2.log" > "$tmp/requeued.log"
same_as_ref "srun job stopped at $k1, requeued, stopped at $k2" "$tmp/requeued.log" "$tmp/metrics-job.jsonl" "$k2"
same_as_ref "mpirun job stopped at $k3" "$mp_log" "$tmp/metrics-mpirun.jsonl" "$k3"
echo "signal_requeue: ok"
