#!/usr/bin/env bash
# Where a run's output goes when the streams or limits around it fail: a closed stdout (">&-") keeps its
# descriptor taken, so no checkpoint file receives the log lines; a full stdout or a pipe whose reader went
# away is reported once on stderr and the run goes on and saves (a closed pipe killed it with SIGPIPE); a
# metrics file on a full device names the real cause (it said "Success"); past a file-size limit (ulimit -f)
# the save fails with the file and the cause, exit 1 (SIGXFSZ killed the process mid-save). ~4 s on 2 cores.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
run=("$GPTRAIN_BIN/pretrain_gpt" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16
     --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 4 --lr 1e-3 --log-interval 1
     --mock-data --vocab-size 97 --seed 3)
resumes() {  # resumes DIR: the checkpoint there loads and trains one more iteration
  "${run[@]}" --train-iters 100 --exit-interval 1 --load "$1" --override-opt-param-scheduler > resume.log 2>&1
}

rc=0; "${run[@]}" --train-iters 4 --save closed --save-interval 2 >&- 2> closed.err || rc=$?
if [ $rc = 0 ] && grep -q "stdout was closed at start" closed.err && resumes closed; then
  ok "a closed stdout: warned, trained, the checkpoint loads"
else
  bad "closed stdout: rc $rc, $(cat closed.err resume.log 2>/dev/null | tail -3)"
fi

rc=0; "${run[@]}" --train-iters 4 > /dev/full 2> full.err || rc=$?
[ $rc = 0 ] && [ "$(grep -c "stdout: write failed (No space left on device)" full.err)" = 1 ] &&
  ok "a full stdout is said once" || bad "full stdout: rc $rc, $(cat full.err)"

set +o pipefail
"${run[@]}" --train-iters 60 --save piped --save-interval 60 2> pipe.err | head -1 > /dev/null
rc=${PIPESTATUS[0]}
set -o pipefail
[ $rc = 0 ] && grep -q "stdout: write failed (Broken pipe)" pipe.err && [ -d piped/iter_0000060 ] &&
  ok "a closed pipe: the run finished and saved" || bad "closed pipe: rc $rc, $(cat pipe.err)"

rc=0; "${run[@]}" --train-iters 2 --metrics-file /dev/full > metrics.out 2>&1 || rc=$?
[ $rc != 0 ] && grep -q "/dev/full: write failed: No space left on device" metrics.out &&
  ok "a full metrics file names the cause" || bad "metrics on /dev/full: rc $rc, $(tail -2 metrics.out)"

rc=0; (ulimit -f 8; exec "${run[@]}" --train-iters 4 --save limited --save-interval 2) > fsize.out 2>&1 || rc=$?
[ $rc = 1 ] && grep -q "limited/.iter_0000002.tmp/.*File too large" fsize.out &&
  ok "past ulimit -f: the save names the file and the cause" || bad "ulimit -f: rc $rc, $(tail -2 fsize.out)"

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
