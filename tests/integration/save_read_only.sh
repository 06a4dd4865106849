#!/usr/bin/env bash
# --save on a read-only file system is refused before the first iteration (not at the first save, hours
# later), for a --save directory that exists there and for one that would be created there, with a message
# naming --save and the reason; --dry-run refuses it the same way. Needs mount (root): skips otherwise.
set -euo pipefail
: "${GPTRAIN_BIN:?}" "${GPTRAIN_TMP:?}"
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP/ro" && cd "$GPTRAIN_TMP"
if ! mount -t tmpfs -o size=4m tmpfs ro 2>/dev/null; then
  echo "SKIP: cannot mount a tmpfs here (not root, or no mount permission in this container)"
  exit 77
fi
trap 'umount "$GPTRAIN_TMP/ro" 2>/dev/null || true' EXIT
mkdir ro/existing
mount -o remount,ro ro
touch ro/probe 2>/dev/null && { echo "FAIL: the tmpfs is still writable"; exit 1; }
M=(--device cpu --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 32
  --micro-batch-size 2 --global-batch-size 4 --train-iters 3 --lr 1e-3 --log-interval 1 --eval-iters 0 --mock-data
  --vocab-size 250 --save-interval 2)
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
for target in ro/existing ro/new/ck; do
  for mode in run dry; do
    extra=()
    [ $mode = dry ] && extra=(--dry-run)
    if "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --save "$target" "${extra[@]}" >out.log 2>&1; then
      bad "$mode --save $target: ran"
    fi
    grep -qE "error: --save $target: cannot write in .*ro.* \(Read-only file system\)" out.log ||
      { cat out.log; bad "$mode --save $target: no message naming --save and the read-only file system"; }
    ! grep -q "iteration        1/" out.log || bad "$mode --save $target: trained before refusing"
  done
done
# The same flags with a writable --save run and save (the refusal is the file system's doing).
"$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --save rw >out.log 2>&1 || { cat out.log; bad "writable --save failed"; }
[ -f rw/latest_checkpointed_iteration.txt ] || bad "writable --save wrote no checkpoint"
[ $fails -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
