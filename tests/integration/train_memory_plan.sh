#!/usr/bin/env bash
# pretrain_gpt prints the memory plan before step 1 (one process: the world of one's single stage); with a
# tiny fp32 model on the CPU its parameter bytes are 4 x the parameter count the same run's optimizer
# reports; --dry-run prints the same plan without training.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
log="$GPTRAIN_TMP/log.txt"
"$GPTRAIN_BIN/pretrain_gpt" --device cpu --mock-data --vocab-size 128 --num-layers 2 --hidden-size 32 \
  --num-attention-heads 2 --seq-length 16 --max-position-embeddings 16 --micro-batch-size 2 --train-iters 2 \
  --lr 1e-3 --log-interval 1 >"$log" 2>&1 || { cat "$log"; exit 1; }
plan=$(grep -m1 "memory plan, pipeline stage 0 of 1 " "$log") || { echo "no memory plan line"; cat "$log"; exit 1; }
step=$(grep -n -m1 "iteration " "$log" | cut -d: -f1)
planline=$(grep -n -m1 "memory plan, " "$log" | cut -d: -f1)
[ -n "$step" ] && [ "$planline" -lt "$step" ] || { echo "memory plan not printed before step 1"; cat "$log"; exit 1; }
nparams=$(grep -m1 -o "AdamW over [0-9]* parameters" "$log" | cut -d' ' -f3)
[ "$(echo "$plan" | sed -E 's/.*TP 1\): ([0-9]+) parameters;.*/\1/')" = "$nparams" ] ||
  { echo "the plan's parameter count differs from the optimizer's $nparams"; echo "$plan"; exit 1; }
mib=$(echo "$plan" | sed -E 's/.*; parameters ([0-9.]+) MiB.*/\1/')
python3 - "$nparams" "$mib" <<'PY'
import sys
n, mib = int(sys.argv[1]), float(sys.argv[2])
want = 4 * n / 2**20
assert abs(mib - want) <= 0.005, f"parameters {mib} MiB, expected 4 x {n} bytes = {want:.4f} MiB"
print(f"memory plan ok: {n} parameters -> {mib} MiB")
PY
# --dry-run of the same flags allocates nothing and prints the same plan (and parameter count).
"$GPTRAIN_BIN/pretrain_gpt" --device cpu --mock-data --vocab-size 128 --num-layers 2 --hidden-size 32 \
  --num-attention-heads 2 --seq-length 16 --max-position-embeddings 16 --micro-batch-size 2 --train-iters 2 \
  --lr 1e-3 --log-interval 1 --dry-run >"$GPTRAIN_TMP/dry.txt" 2>&1 || { cat "$GPTRAIN_TMP/dry.txt"; exit 1; }
dry=$(grep -m1 -o "memory plan, pipeline stage.*" "$GPTRAIN_TMP/dry.txt" | sed -E 's/ \(layers [^)]*\)$//') ||
  { echo "no plan in --dry-run"; cat "$GPTRAIN_TMP/dry.txt"; exit 1; }
[ "$dry" = "${plan#pretrain_gpt: }" ] || { echo "--dry-run plan differs from the run's:"; echo " run: $plan"; echo " dry: $dry"; exit 1; }
grep -q "$nparams parameters in total" "$GPTRAIN_TMP/dry.txt" || { echo "--dry-run total != $nparams"; cat "$GPTRAIN_TMP/dry.txt"; exit 1; }
if grep -q "iteration " "$GPTRAIN_TMP/dry.txt"; then echo "--dry-run trained"; exit 1; fi
echo "--dry-run: same plan and $nparams parameters, no iteration run"
