#!/usr/bin/env bash
# pretrain_gpt prints the memory plan before step 1; with a tiny fp32 model on the CPU its parameter
# bytes are 4 x the parameter count the same run reports.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
log="$GPTRAIN_TMP/log.txt"
"$GPTRAIN_BIN/pretrain_gpt" --device cpu --mock-data --vocab-size 128 --num-layers 2 --hidden-size 32 \
  --num-attention-heads 2 --seq-length 16 --max-position-embeddings 16 --micro-batch-size 2 --train-iters 2 \
  --lr 1e-3 --log-interval 1 >"$log" 2>&1 || { cat "$log"; exit 1; }
plan=$(grep -m1 "memory plan: parameters" "$log") || { echo "no memory plan line"; cat "$log"; exit 1; }
step=$(grep -n -m1 "iteration " "$log" | cut -d: -f1)
planline=$(grep -n -m1 "memory plan:" "$log" | cut -d: -f1)
[ -n "$step" ] && [ "$planline" -lt "$step" ] || { echo "memory plan not printed before step 1"; cat "$log"; exit 1; }
nparams=$(grep -m1 -o "[0-9]* parameters (" "$log" | cut -d' ' -f1)
mib=$(echo "$plan" | sed -E 's/.*parameters ([0-9.]+) MiB.*/\1/')
python3 - "$nparams" "$mib" <<'PY'
import sys
n, mib = int(sys.argv[1]), float(sys.argv[2])
want = 4 * n / 2**20
assert abs(mib - want) <= 0.005, f"parameters {mib} MiB, expected 4 x {n} bytes = {want:.4f} MiB"
print(f"memory plan ok: {n} parameters -> {mib} MiB")
PY
