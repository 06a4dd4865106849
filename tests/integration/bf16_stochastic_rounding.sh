#!/usr/bin/env bash
# --bf16-stochastic-rounding (gptrain: AdamW on bf16 parameters without fp32 master weights, each update
# rounded to bf16 stochastically):
# 1. the kernel equals a numpy float32 reference bit for bit (tests/python/adamw_stochastic_ref.py: Philox,
#    the global-index map and the rounding transcribed; 3 steps, 4099 values, fp32 and bf16 moments);
# 2. refusals by flag name: with --fp16, --optimizer sgd, --optimizer-cpu-offload;
# 3. training (fp32 backend: bf16 values held in fp32): the start-up line names it, every saved weight is a
#    bf16 value, the losses differ from the fp32-master run's but stay within 2% over 8 iterations; with
#    bf16 moments too (precision-aware optimizer);
# 4. saved at iteration 4 and resumed: iterations 5-8 of the straight run bit for bit (the rounding bits are
#    keyed by the step, not by the process's history);
# 5. --dry-run's plan says there are no master weights.
# ~12 s on 2 cores.
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*"; exit 1; }

echo "== 1. the kernel against numpy"
mkdir -p "$tmp/dump"
GPTRAIN_ADAMW_DUMP="$tmp/dump" "$bin/unit_kernels" "[.adamw_sr_dump]" > "$tmp/dump.log" 2>&1 || { cat "$tmp/dump.log"; fail "dump"; }
"$GPTRAIN_PYTHON" "$GPTRAIN_SRC/tests/python/adamw_stochastic_ref.py" --dir "$tmp/dump" || fail "numpy reference"

common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 2 --global-batch-size 4 --train-iters 8 --lr 1e-2 --mock-data --vocab-size 97 --log-interval 1
  --eval-iters 0 --seed 7 --hidden-dropout 0 --attention-dropout 0)
sr=(--bf16-stochastic-rounding)

echo "== 2. refusals"
refused() {  # refused 'expected message part' FLAGS...
  local want=$1
  shift
  if "$bin/pretrain_gpt" "${common[@]}" "$@" > "$tmp/refused.log" 2>&1; then fail "accepted: $*"; fi
  grep -qF -- "$want" "$tmp/refused.log" || { cat "$tmp/refused.log"; fail "no '$want' for: $*"; }
  echo "refused: $* -> $(grep -F -- "$want" "$tmp/refused.log" | head -1)"
}
refused "--bf16-stochastic-rounding keeps bf16 parameters: not with --fp16" "${sr[@]}" --fp16
refused "--bf16-stochastic-rounding: only with --optimizer adam" "${sr[@]}" --optimizer sgd
refused "--bf16-stochastic-rounding keeps no fp32 master weights to offload" "${sr[@]}" --optimizer-cpu-offload \
  --use-precision-aware-optimizer --use-distributed-optimizer

echo "== 3. training"
source "$GPTRAIN_SRC/tests/integration/metrics_runs.bash"
run plain
run sr "${sr[@]}" --save "$tmp/ck_sr" --save-interval 8
grep -qF "bf16 parameters without fp32 master weights, updates rounded stochastically" "$tmp/sr.log" ||
  { cat "$tmp/sr.log"; fail "no start-up line"; }
if diff -q "$tmp/plain.losses" "$tmp/sr.losses" > /dev/null; then fail "stochastic rounding gave the fp32 losses"; fi
err=$(paste "$tmp/plain.losses" "$tmp/sr.losses" | awk '{ e = ($4 - $2) / $2; if (e < 0) e = -e; if (e > m) m = e } END { printf "%.3e", m }')
echo "stochastic rounding: max relative loss difference from the fp32-master run $err"
awk -v e="$err" 'BEGIN { exit !(e < 2e-2) }' || fail "stochastic rounding moved the losses by $err"
python3 - "$tmp/ck_sr/iter_0000008/model_tp00_pp000.safetensors" <<'PY' || fail "saved weights are not bf16 values"
import json, struct, sys
data = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", data[:8])[0]
header = json.loads(data[8:8 + n])
total = bad = 0
for name, t in header.items():
    if name == "__metadata__":
        continue
    assert t["dtype"] == "F32", name
    lo, hi = t["data_offsets"]
    words = struct.unpack(f"<{(hi - lo) // 4}I", data[8 + n + lo:8 + n + hi])
    total += len(words)
    bad += sum(1 for w in words if w & 0xFFFF)
print(f"saved model weights: {total} fp32 values, {bad} with bits beyond bf16's")
sys.exit(1 if bad or not total else 0)
PY
run sr_bf16m "${sr[@]}" --use-distributed-optimizer --use-precision-aware-optimizer --exp-avg-dtype bf16 \
  --exp-avg-sq-dtype bf16
if diff -q "$tmp/sr.losses" "$tmp/sr_bf16m.losses" > /dev/null; then fail "bf16 moments had no effect"; fi

echo "== 4. resume"
"$bin/pretrain_gpt" "${common[@]}" "${sr[@]}" --save "$tmp/ck" --save-interval 4 --exit-interval 4 > "$tmp/first.log" 2>&1 ||
  { cat "$tmp/first.log"; fail "save"; }
"$bin/pretrain_gpt" "${common[@]}" "${sr[@]}" --load "$tmp/ck" --metrics-file "$tmp/resumed.jsonl" > "$tmp/resumed.log" 2>&1 ||
  { cat "$tmp/resumed.log"; fail "resume"; }
losses "$tmp/resumed.jsonl" > "$tmp/resumed.losses"
diff <(awk '$1 > 4' "$tmp/sr.losses") "$tmp/resumed.losses" || fail "the resumed run differs"
echo "resumed bit for bit"

echo "== 5. --dry-run"
"$bin/pretrain_gpt" "${common[@]}" "${sr[@]}" --dry-run > "$tmp/dry.log" 2>&1 || { cat "$tmp/dry.log"; fail "dry run"; }
grep -qF "no master weights (--bf16-stochastic-rounding)" "$tmp/dry.log" || { cat "$tmp/dry.log"; fail "the plan does not say it"; }
echo "PASS"
