#!/usr/bin/env bash
# pretrain_gpt prints the memory plan before step 1 (one process: the world of one's single stage); with a
# tiny fp32 model on the CPU its parameter bytes are 4 x the parameter count the same run's optimizer
# reports; --dry-run prints the same plan without training, refuses sizes it cannot represent, and its time grows
# linearly with the layers; on the CPU a run under an address-space limit too small for it is refused
# naming the limit (it hung in OpenBLAS).
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

# Sizes a plan cannot represent: 2 x 2147483647 tokens per micro-batch overflowed into activations of 16 EiB in a
# total of 1 TiB. Now refused naming the flags; at 1 x 2147483647 every size is a real one and the total is at
# least each part (the per-layer figures too); a plan beyond 64 bits is refused.
small=(--device cpu --mock-data --vocab-size 128 --num-layers 2 --hidden-size 32 --num-attention-heads 2
  --train-iters 2 --lr 1e-3 --dry-run)
if "$GPTRAIN_BIN/pretrain_gpt" "${small[@]}" --seq-length 2147483647 --max-position-embeddings 2147483647 \
  --micro-batch-size 2 >"$GPTRAIN_TMP/huge2.txt" 2>&1; then
  echo "FAIL: 2 x 2147483647 tokens per micro-batch planned:"; grep "memory plan" "$GPTRAIN_TMP/huge2.txt"; exit 1
fi
grep -q "error: .*--micro-batch-size 2 x --seq-length 2147483647" "$GPTRAIN_TMP/huge2.txt" ||
  { cat "$GPTRAIN_TMP/huge2.txt"; exit 1; }
"$GPTRAIN_BIN/pretrain_gpt" "${small[@]}" --seq-length 2147483647 --max-position-embeddings 2147483647 \
  --micro-batch-size 1 >"$GPTRAIN_TMP/huge1.txt" 2>&1 || { cat "$GPTRAIN_TMP/huge1.txt"; exit 1; }
python3 - "$GPTRAIN_TMP/huge1.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
unit = {"MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50, "EiB": 2**60}
size = lambda s: float(s.split()[0]) * unit[s.split()[1]]
plan = re.search(r"memory plan, pipeline stage 0 of 1 .*", text)[0]
parts = {k: size(v) for k, v in re.findall(r"(parameters|gradients|optimizer state|activations|workspace) "
                                            r"([0-9.]+ [KMGTPE]iB)", plan)}
total = size(re.search(r"total ([0-9.]+ [KMGTPE]iB)", plan)[1])
assert len(parts) == 5 and all(total >= 0.999 * v for v in parts.values()), (total, parts)
layer = re.search(r"activations per layer and micro-batch.*", text)[0]
assert " 0.00 MiB" not in layer, layer
print(f"2147483647 tokens: total {total / 2**30:.0f} GiB >= every part")
PY
# With a vocabulary of 2147483000 the logits alone come near 2^64 bytes: beyond 64 bits, refused as such.
if "$GPTRAIN_BIN/pretrain_gpt" "${small[@]}" --seq-length 2147483647 --max-position-embeddings 2147483647 \
  --micro-batch-size 1 --vocab-size 2147483000 >"$GPTRAIN_TMP/huge3.txt" 2>&1; then
  echo "FAIL: a plan beyond 2^64 bytes planned:"; grep "memory plan" "$GPTRAIN_TMP/huge3.txt"; exit 1
fi
grep -q "error: .*more than 2^64 bytes (16 EiB); sizes this large cannot be represented" "$GPTRAIN_TMP/huge3.txt" ||
  { cat "$GPTRAIN_TMP/huge3.txt"; exit 1; }

# --dry-run's time grows linearly with the layers: 2000 layers plan in at most 24 x the time of 250 (the
# recomputation choices took 1.8 s for 250 layers and 74 s for 2000).
dry_seconds() {  # layers
  local t0 t1
  t0=$(date +%s%N)
  timeout 60 "$GPTRAIN_BIN/pretrain_gpt" "${small[@]}" --seq-length 16 --max-position-embeddings 16 \
    --micro-batch-size 2 --num-layers "$1" >"$GPTRAIN_TMP/layers$1.txt" 2>&1 || { cat "$GPTRAIN_TMP/layers$1.txt"; exit 1; }
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}
ms250=$(dry_seconds 250)
ms2000=$(dry_seconds 2000)
echo "--dry-run: 250 layers ${ms250} ms, 2000 layers ${ms2000} ms"
[ "$ms2000" -le $((24 * ms250)) ] || { echo "FAIL: 2000 layers took more than 24 x 250 layers' time"; exit 1; }

# On the CPU the plan is checked against the process's limits too. Under ulimit -v 256 MiB a tiny run hung
# for ever in OpenBLAS (its GEMM buffer could not be allocated); now it is refused naming the limit.
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
if asan_build; then echo "ulimit -v: skipped under AddressSanitizer"; exit 0; fi
set +e
(ulimit -v 262144; exec timeout 60 "$GPTRAIN_BIN/pretrain_gpt" --device cpu --mock-data --vocab-size 128 --num-layers 2 \
  --hidden-size 32 --num-attention-heads 2 --seq-length 16 --max-position-embeddings 16 --micro-batch-size 2 \
  --train-iters 2 --lr 1e-3) >"$GPTRAIN_TMP/ulimit.txt" 2>&1
rc=$?
set -e
[ $rc = 1 ] && grep -q "the address-space limit (ulimit -v) leaves this process .* but the CPU backend needs" \
  "$GPTRAIN_TMP/ulimit.txt" || { echo "FAIL: under ulimit -v 256 MiB (rc $rc):"; cat "$GPTRAIN_TMP/ulimit.txt"; exit 1; }
echo "ulimit -v 256 MiB: refused naming the limit"
