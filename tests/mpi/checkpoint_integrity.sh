#!/usr/bin/env bash
# Checksums and async saves under mpirun (pretrain_gpt, 2 ranks: DP2, and TP2 x PP1 / PP2):
# - async saves hold the same bytes as synchronous ones in every layout;
# - a background write failing on rank 1 only stops both ranks with the same error naming rank 1's file,
#   nothing committed, no hang;
# - a damaged tensor found by one rank's share of the verification stops both ranks with the same message,
#   and --ckpt-fallback-to-intact makes both resume from the earlier checkpoint, equal to the straight run;
# - a --save directory locked by another process stops both ranks with the message naming it (rank 0 holds
#   the run's lock), no hang.
# ~1 min on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
bin=$GPTRAIN_BIN/pretrain_gpt
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 8 --train-iters 8 --lr 1e-2 --mock-data --vocab-size 97
        --log-interval 1 --seed 7 --distributed-timeout-minutes 1)
source "$GPTRAIN_SRC/tests/integration/log_lines.bash"

for layout in "" "--tensor-model-parallel-size 2" "--pipeline-model-parallel-size 2"; do
  name=$(echo "${layout:-dp2}" | tr -cd 'a-z0-9')
  # shellcheck disable=SC2086
  mpirun_n 2 "$bin" "${common[@]}" $layout --save "$tmp/sync_$name" --save-interval 4 > "$tmp/sync_$name.log" 2>&1 ||
    { cat "$tmp/sync_$name.log"; exit 1; }
  # shellcheck disable=SC2086
  mpirun_n 2 "$bin" "${common[@]}" $layout --save "$tmp/async_$name" --save-interval 4 --async-save \
    > "$tmp/async_$name.log" 2>&1 || { cat "$tmp/async_$name.log"; exit 1; }
  files=0
  for f in "$tmp/sync_$name"/iter_*/*.safetensors; do
    g=$tmp/async_$name/${f#"$tmp/sync_$name/"}
    cmp "$f" "$g" || { echo "FAIL: $layout: $g differs from the synchronous save"; exit 1; }
    files=$((files + 1))
  done
  numbers "$tmp/sync_$name.log" | diff - <(numbers "$tmp/async_$name.log") || { echo "FAIL: $layout losses"; exit 1; }
  echo "${layout:-DP2}: async save = sync save ($files tensor files byte-identical)"
done

# Rank 1's background write fails (its first tensor file of the second save: iteration 8's model file).
set +e
timeout 300 mpirun --oversubscribe --allow-run-as-root -np 1 "$bin" "${common[@]}" --tensor-model-parallel-size 2 \
  --save "$tmp/eio" --save-interval 4 --async-save : -np 1 -x GPTRAIN_FAULT_INJECT=tensor-file:3 "$bin" "${common[@]}" \
  --tensor-model-parallel-size 2 --save "$tmp/eio" --save-interval 4 --async-save > "$tmp/eio.log" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: rc $rc (0: unnoticed, 124: hang)"; cat "$tmp/eio.log"; exit 1; }
grep -q "saving iter_0000008 to .*rank 1: .*model_tp01_pp000.safetensors: cannot write" "$tmp/eio.log" ||
  { echo "FAIL: the error does not name rank 1's file"; cat "$tmp/eio.log"; exit 1; }
[ "$(cat "$tmp/eio/latest_checkpointed_iteration.txt")" = 4 ] || { echo "FAIL: tracker moved"; exit 1; }
[ ! -e "$tmp/eio/iter_0000008" ] || { echo "FAIL: iter_0000008 committed"; exit 1; }
echo "a failed background write on rank 1 stops both ranks (rc $rc), nothing committed"

# A damaged tensor in rank 1's share (TP2: files model_tp00, model_tp01, optim_tp00, optim_tp01 in name order;
# rank 1 verifies the 2nd and 4th).
ck=$tmp/sync_tensormodelparallelsize2
python3 - "$ck/iter_0000008/optim_tp01_pp000_dp000.safetensors" <<'PY'
import json, struct, sys
with open(sys.argv[1], "r+b") as f:
    n = struct.unpack("<Q", f.read(8))[0]; h = json.loads(f.read(n))
    b, e = h["exp_avg_sq.decoder.layers.0.self_attention.linear_qkv.weight"]["data_offsets"]
    f.seek(8 + n + b + 5); c = f.read(1); f.seek(8 + n + b + 5); f.write(bytes([c[0] ^ 1]))
PY
if mpirun_n 2 "$bin" "${common[@]}" --tensor-model-parallel-size 2 --load "$ck" > "$tmp/damaged.log" 2>&1; then
  echo "FAIL: loaded a damaged checkpoint"; exit 1
fi
grep -q 'rank 1: .*optim_tp01_pp000_dp000.safetensors: tensor "exp_avg_sq.decoder.layers.0.self_attention.linear_qkv.weight" is damaged' \
  "$tmp/damaged.log" || { echo "FAIL: no message naming the tensor"; cat "$tmp/damaged.log"; exit 1; }
grep -q -- "--ckpt-step 4" "$tmp/damaged.log" || { echo "FAIL: no hint at iteration 4"; exit 1; }
mpirun_n 2 "$bin" "${common[@]}" --tensor-model-parallel-size 2 --load "$ck" --ckpt-fallback-to-intact \
  > "$tmp/fallback.log" 2>&1 || { cat "$tmp/fallback.log"; exit 1; }
numbers "$tmp/sync_tensormodelparallelsize2.log" | grep -E "iteration +[5-8]/" | diff - <(numbers "$tmp/fallback.log") ||
  { echo "FAIL: the fallback run differs"; exit 1; }
echo "damage in rank 1's share: both ranks refuse with its message; --ckpt-fallback-to-intact resumes from 4 bitwise"

# Another process holds the --save directory's lock (as a running pretrain_gpt does: flock plus "host pid").
mkdir -p "$tmp/locked"
python3 -c '
import fcntl, os, socket, sys, time
f = open(sys.argv[1], "a+"); fcntl.flock(f, fcntl.LOCK_EX)
f.truncate(0); f.write(f"{socket.gethostname()} {os.getpid()}\n"); f.flush(); print("locked", flush=True); time.sleep(120)
' "$tmp/locked/.gptrain-save.lock" > "$tmp/holder.log" &
holder=$!
for _ in $(seq 100); do grep -q locked "$tmp/holder.log" && break; sleep 0.1; done
set +e
mpirun_n 2 "$bin" "${common[@]}" --save "$tmp/locked" --save-interval 4 > "$tmp/locked.log" 2>&1
rc=$?
set -e
kill $holder
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { echo "FAIL: rc $rc (0: ran beside the lock holder, 124: hang)"; cat "$tmp/locked.log"; exit 1; }
[ "$(grep -c "another run is saving into this directory (host $(hostname), pid $holder" "$tmp/locked.log")" = 2 ] ||
  { echo "FAIL: not both ranks name the lock holder"; cat "$tmp/locked.log"; exit 1; }
grep -qE "iteration +1/" "$tmp/locked.log" && { echo "FAIL: trained beside the lock holder"; exit 1; }
echo "a locked --save stops both ranks (rc $rc) naming the holder"
