#!/usr/bin/env bash
# --async-save and non-persistent saves on a real run:
# - async checkpoints hold the same tensor bytes as synchronous ones, and a resume from one is bitwise;
# - a process killed while its background thread writes leaves the previous checkpoint current (tracker
#   and files), and the next run resumes from it bitwise, removing the killed save's temporary (and, with a
#   line, what a deletion killed part-way left); a failed background write stops the run with an error naming
#   the file, nothing committed;
# - --non-persistent-save-interval writes to <save>/non_persistent keeping only the latest, and --load takes
#   it when it is newer than the tracker's (Megatron's rule), the tracker's otherwise.
# ~25 s on 2 cores.
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 4 --train-iters 12 --lr 1e-2 --min-lr 1e-3 --lr-warmup-iters 2
        --lr-decay-style cosine --mock-data --vocab-size 97 --log-interval 1 --seed 7 --hidden-dropout 0.1)
source "$GPTRAIN_SRC/tests/integration/log_lines.bash"
tail_from() {  # log first-iteration
  numbers "$tmp/straight.log" | awk -v f="$2" '{ for (i = 1; i <= NF; ++i) if ($i == "iteration") { split($(i+1), a, "/"); if (a[1] + 0 >= f) print; break } }'
}
"$bin/pretrain_gpt" "${common[@]}" > "$tmp/straight.log"

# 1. Same bytes, sync and async; the async log says it trained on while writing.
"$bin/pretrain_gpt" "${common[@]}" --save "$tmp/sync" --save-interval 3 > "$tmp/sync.log"
"$bin/pretrain_gpt" "${common[@]}" --save "$tmp/async" --save-interval 3 --async-save > "$tmp/async.log"
grep -q "started an async save of iteration       3" "$tmp/async.log" || { echo "FAIL: no async start"; cat "$tmp/async.log"; exit 1; }
grep -q "saved checkpoint at iteration       3 .*written in the background" "$tmp/async.log" || { echo "FAIL: no async commit"; exit 1; }
for it in 3 6 9 12; do
  d=$(printf iter_%07d $it)
  for f in model_tp00_pp000.safetensors optim_tp00_pp000_dp000.safetensors; do
    cmp "$tmp/sync/$d/$f" "$tmp/async/$d/$f" || { echo "FAIL: $d/$f differs between sync and async"; exit 1; }
  done
done
[ "$(cat "$tmp/async/latest_checkpointed_iteration.txt")" = 12 ] || { echo "FAIL: async tracker"; exit 1; }
numbers "$tmp/straight.log" | diff - <(numbers "$tmp/async.log") || { echo "FAIL: async run's losses differ"; exit 1; }
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/async" --ckpt-step 6 > "$tmp/async_resume.log"
tail_from straight 7 | diff - <(numbers "$tmp/async_resume.log") || { echo "FAIL: resume from async differs"; exit 1; }

# 2. Killed during the background write of the second save (tensor files 1-2: iteration 3; 3: iteration 6's
#    model file): iteration 3 stays current and complete.
set +e
GPTRAIN_FAULT_INJECT=kill-at-tensor-file:3 "$bin/pretrain_gpt" "${common[@]}" --save "$tmp/killed" --save-interval 3 \
  --async-save > "$tmp/killed.log" 2>&1
rc=$?
set -e
[ $rc -eq 137 ] || { echo "FAIL: expected death by SIGKILL (137), got $rc"; tail -3 "$tmp/killed.log"; exit 1; }
[ "$(cat "$tmp/killed/latest_checkpointed_iteration.txt")" = 3 ] || { echo "FAIL: tracker moved"; exit 1; }
[ ! -e "$tmp/killed/iter_0000006" ] || { echo "FAIL: a half-written iter_0000006 appeared"; exit 1; }
# As a run killed while retention deleted an older iteration leaves it (renamed, partly deleted).
mkdir -p "$tmp/killed/.iter_0000001.deleting" && head -c 1000000 /dev/zero > "$tmp/killed/.iter_0000001.deleting/x"
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/killed" --save "$tmp/killed" --save-interval 3 --async-save \
  > "$tmp/killed_resume.log" 2>&1
grep -q "removed a stale temporary" "$tmp/killed_resume.log" || { echo "FAIL: the killed save's temporary stayed"; exit 1; }
grep -q "iter_0000001.deleting: removed the rest of an older checkpoint" "$tmp/killed_resume.log" &&
  [ ! -e "$tmp/killed/.iter_0000001.deleting" ] || { echo "FAIL: the interrupted deletion's leftover stayed"; exit 1; }
tail_from straight 4 | diff - <(numbers "$tmp/killed_resume.log") || { echo "FAIL: resume after the kill differs"; exit 1; }

# 3. A background write failing with EIO: the run stops naming the file; iteration 3 stays current.
if GPTRAIN_FAULT_INJECT=tensor-file:4 "$bin/pretrain_gpt" "${common[@]}" --save "$tmp/eio" --save-interval 3 \
  --async-save > "$tmp/eio.log" 2>&1; then
  echo "FAIL: a failed write went unnoticed"; exit 1
fi
grep -q "saving iter_0000006 to .*optim_tp00_pp000_dp000.safetensors: cannot write.*nothing was committed" "$tmp/eio.log" ||
  { echo "FAIL: the error does not name the file"; cat "$tmp/eio.log"; exit 1; }
[ "$(cat "$tmp/eio/latest_checkpointed_iteration.txt")" = 3 ] || { echo "FAIL: tracker moved after EIO"; exit 1; }

# 4. Non-persistent saves (persistent every 5, non-persistent every 2, async too): the crash after iteration 8
#    is simulated by stopping there (--exit-interval saves persistently, so drop that save afterwards).
np=(--non-persistent-save-interval 2 --non-persistent-ckpt-type global)
"$bin/pretrain_gpt" "${common[@]}" --save "$tmp/np" --save-interval 5 "${np[@]}" --async-save --exit-interval 9 \
  > "$tmp/np.log" 2>&1
ls "$tmp/np/non_persistent" | grep -x 'iter_[0-9]*' > "$tmp/np.dirs"
[ "$(cat "$tmp/np.dirs")" = iter_0000008 ] || { echo "FAIL: non_persistent holds $(cat "$tmp/np.dirs")"; exit 1; }
[ "$(cat "$tmp/np/non_persistent/latest_checkpointed_iteration.txt")" = 8 ] || { echo "FAIL: np tracker"; exit 1; }
grep -q "saved non-persistent checkpoint at iteration       2" "$tmp/np.log" || { echo "FAIL: np log line"; exit 1; }
rm -rf "$tmp/np/iter_0000009" && printf 5 > "$tmp/np/latest_checkpointed_iteration.txt"
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/np" --non-persistent-ckpt-type global > "$tmp/np_resume.log" 2>&1
grep -q "loaded checkpoint .*non_persistent/iter_0000008 at iteration 8" "$tmp/np_resume.log" || { cat "$tmp/np_resume.log"; exit 1; }
tail_from straight 9 | diff - <(numbers "$tmp/np_resume.log") || { echo "FAIL: resume from non-persistent differs"; exit 1; }
# Without --non-persistent-ckpt-type --load reads the tracker (5), as Megatron.
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/np" > "$tmp/p_resume.log" 2>&1
grep -q "loaded checkpoint .*/np/iter_0000005 at iteration 5" "$tmp/p_resume.log" || { cat "$tmp/p_resume.log"; exit 1; }
# Refusals by name.
for bad in "--non-persistent-save-interval 2" "--non-persistent-save-interval 2 --non-persistent-ckpt-type local" \
           "--non-persistent-save-interval 0 --non-persistent-ckpt-type global"; do
  # shellcheck disable=SC2086
  if "$bin/pretrain_gpt" "${common[@]}" --save "$tmp/x" --save-interval 5 $bad > "$tmp/bad.log" 2>&1; then
    echo "FAIL: accepted $bad"; exit 1
  fi
  grep -q -- "--non-persistent" "$tmp/bad.log" || { echo "FAIL: '$bad' refused without naming the flag"; cat "$tmp/bad.log"; exit 1; }
done
echo "async saves: same bytes, atomic under kill and EIO, bitwise resume; non-persistent saves: latest kept, loaded by Megatron's rule"
