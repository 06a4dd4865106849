#!/usr/bin/env bash
# A dead rank (SIGKILL) or a stuck rank (SIGSTOP) must end the whole job in bounded time with a
# message naming a rank, never a silent hang. The stopped rank's peers name it alone (the rank that did
# not arrive, found by a roll call), without Open MPI's MPI_ABORT banner. ~20 s on 2 cores.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
log=$GPTRAIN_TMP/job.log
tag="--size-mb 0.01 --iters 10 --repeat 1000000000 --distributed-timeout-minutes 0.1"

rank_pid() {  # pid of the preflight process with OMPI_COMM_WORLD_RANK=$1 among the children of $2
  for p in $(pgrep -P "$2"); do
    if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$1"; then echo "$p"; return; fi
  done
}

run_case() {  # signal
  local sig=$1
  mpirun --oversubscribe --allow-run-as-root -np 3 "$GPTRAIN_BIN/gptrain_preflight" $tag >"$log" 2>&1 &
  local job=$!
  local victim=""
  for _ in $(seq 100); do
    grep -q "preflight all_reduce" "$log" 2>/dev/null && victim=$(rank_pid 1 "$job")
    [ -n "$victim" ] && break
    sleep 0.2
  done
  [ -n "$victim" ] || { echo "job did not start"; cat "$log"; kill "$job"; exit 1; }
  local t0=$SECONDS
  kill -"$sig" "$victim"
  local rc=0
  # Bounded: the job must end by itself within 60 s (timeout 6 s + abort).
  for _ in $(seq 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$job" 2>/dev/null; then
    echo "job still running 60 s after SIG$sig of rank 1"; kill -9 "$job"; kill -9 "$victim"; exit 1
  fi
  wait "$job" || rc=$?
  echo "SIG$sig rank 1: job ended in $((SECONDS - t0)) s with exit code $rc"
  grep -v "preflight all_reduce" "$log" | tail -8
  [ "$rc" -ne 0 ]
}

run_case KILL
grep -q "process rank 1 .* exited on signal 9" "$log"
run_case STOP
grep -Eq "\[rank [02]\] fatal: .*timed out after 6 s waiting for world rank 1, which did not arrive" "$log"
if grep -Eq "timed out .*waiting for (ranks|world ranks) " "$log"; then
  echo "FAIL: a timeout names more than the stopped rank"; grep "timed out" "$log"; exit 1
fi
if grep -q "MPI_ABORT was invoked" "$log"; then echo "FAIL: Open MPI's abort banner is back"; exit 1; fi
echo "rank_failure: ok"
