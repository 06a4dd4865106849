#!/usr/bin/env bash
# Megatron's precision-aware optimizer state dtypes (--use-precision-aware-optimizer, --exp-avg-dtype,
# --exp-avg-sq-dtype):
# 1. the fused AdamW with bf16-stored moments equals a numpy float32 reference with round-to-nearest-even
#    storage bit for bit (tests/python/adamw_stored_ref.py, 3 steps, 4099 values, each storage pair);
# 2. refusals by flag name: fp16 / fp8 moments, a non-fp32 moment without --use-precision-aware-optimizer,
#    the switch without --use-distributed-optimizer, --main-params-dtype fp16, --main-grads-dtype bf16;
# 3. fp32 dtypes given explicitly print the losses (JSONL doubles) of the same run without the flags, bit for
#    bit; bf16 moments train (losses differ, within 1e-3 relative over 8 iterations);
# 4. --dry-run's optimizer state shrinks from 8 to 4 bytes per element with both moments bf16 (6 with one; to
#    the printed precision, the exact bytes are memory_plan_test's) and names the dtypes;
# 5. bf16 moments saved at iteration 4 and resumed print iterations 5-8 of the straight run bit for bit; the
#    same checkpoint resumes with fp32 moments (Megatron keeps fp32 state in checkpoints and converts).
# ~15 s on 2 cores.
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
fail() { echo "FAIL: $*"; exit 1; }

echo "== 1. bf16-stored moments against numpy"
mkdir -p "$tmp/dump"
GPTRAIN_ADAMW_DUMP="$tmp/dump" "$bin/unit_kernels" "[.adamw_dump]" > "$tmp/dump.log" 2>&1 || { cat "$tmp/dump.log"; fail "dump"; }
"$GPTRAIN_PYTHON" "$GPTRAIN_SRC/tests/python/adamw_stored_ref.py" --dir "$tmp/dump" || fail "numpy reference"

common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 2 --global-batch-size 4 --train-iters 8 --lr 1e-2 --mock-data --vocab-size 97 --log-interval 1
  --eval-iters 0 --seed 7 --hidden-dropout 0 --attention-dropout 0 --use-distributed-optimizer)
pa=(--use-precision-aware-optimizer)

echo "== 2. refusals"
refused() {  # refused 'expected message part' FLAGS...
  local want=$1
  shift
  if "$bin/pretrain_gpt" "${common[@]}" "$@" > "$tmp/refused.log" 2>&1; then fail "accepted: $*"; fi
  grep -qF -- "$want" "$tmp/refused.log" || { cat "$tmp/refused.log"; fail "no '$want' for: $*"; }
  echo "refused: $* -> $(grep -F -- "$want" "$tmp/refused.log" | head -1)"
}
refused "--exp-avg-dtype fp16: only fp32 or bf16" "${pa[@]}" --exp-avg-dtype fp16
refused "--exp-avg-sq-dtype fp8: only fp32 or bf16" "${pa[@]}" --exp-avg-sq-dtype fp8
refused "--exp-avg-dtype bf16: a moment dtype other than fp32 needs --use-precision-aware-optimizer" --exp-avg-dtype bf16
refused "--main-params-dtype" "${pa[@]}" --main-params-dtype fp16
refused "--main-grads-dtype" "${pa[@]}" --main-grads-dtype bf16
if "$bin/pretrain_gpt" "${common[@]/--use-distributed-optimizer/--seed}" 7 "${pa[@]}" > "$tmp/refused.log" 2>&1; then
  fail "--use-precision-aware-optimizer accepted without --use-distributed-optimizer"
fi
grep -qF -- "--use-precision-aware-optimizer is only supported with --use-distributed-optimizer" "$tmp/refused.log" ||
  { cat "$tmp/refused.log"; fail "no message for the switch without the distributed optimizer"; }

echo "== 3. fp32 dtypes: today's losses; bf16 moments: close"
source "$GPTRAIN_SRC/tests/integration/metrics_runs.bash"
run plain
run fp32 "${pa[@]}" --exp-avg-dtype fp32 --exp-avg-sq-dtype fp32 --main-params-dtype fp32 --main-grads-dtype fp32
diff "$tmp/plain.losses" "$tmp/fp32.losses" || fail "explicit fp32 dtypes changed the losses"
run bf16 "${pa[@]}" --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16
grep -q "moments stored as exp_avg bf16 / exp_avg_sq bf16" "$tmp/bf16.log" || fail "no start-up line for the dtypes"
if diff -q "$tmp/plain.losses" "$tmp/bf16.losses" > /dev/null; then fail "bf16 moments gave the fp32 losses"; fi
err=$(paste "$tmp/plain.losses" "$tmp/bf16.losses" | awk '{ e = ($4 - $2) / $2; if (e < 0) e = -e; if (e > m) m = e } END { printf "%.3e", m }')
echo "bf16 moments: max relative loss difference from fp32 moments $err"
awk -v e="$err" 'BEGIN { exit !(e < 1e-3) }' || fail "bf16 moments moved the losses by $err"

echo "== 4. --dry-run bytes"
opt_bytes() {  # the planned optimizer state as printed ("0.23 MiB"; the exact bytes: memory_plan_test)
  "$bin/pretrain_gpt" "${common[@]}" --dry-run "$@" > "$tmp/dry.log" 2>&1 || { cat "$tmp/dry.log"; fail "dry run $*"; }
  sed -n -E 's/.*optimizer state ([0-9.]+ [KMG]?i?B) \(.*/\1/p' "$tmp/dry.log" | head -1
}
b32=$(opt_bytes)
b16=$(opt_bytes "${pa[@]}" --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16)
bmix=$(opt_bytes "${pa[@]}" --exp-avg-sq-dtype bf16)
echo "planned optimizer state: fp32 $b32, both bf16 $b16, exp_avg_sq bf16 $bmix"
grep -q "moments (exp_avg fp32, exp_avg_sq bf16)" "$tmp/dry.log" || { cat "$tmp/dry.log"; fail "the plan does not name the dtypes"; }
python3 - "$b32" "$b16" "$bmix" <<'PY' || fail "planned bytes"
import sys
u = {"B": 1, "KiB": 1024, "MiB": 1024 ** 2, "GiB": 1024 ** 3}
def b(s):  # value, and the printed precision (two decimals) as a tolerance
    v, unit = s.split()
    return float(v) * u[unit], 0.01 * u[unit]
(f, tf), (h, th), (m, tm) = (b(x) for x in sys.argv[1:])
assert abs(h - f / 2) <= th + tf / 2 and abs(m - 0.75 * f) <= tm + tf, (f, h, m)
PY

echo "== 5. resume with bf16 moments"
rm -rf "$tmp/ck"
"$bin/pretrain_gpt" "${common[@]}" "${pa[@]}" --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 --save "$tmp/ck" \
  --save-interval 4 --exit-interval 4 > "$tmp/first.log" 2>&1 || { cat "$tmp/first.log"; fail "save"; }
"$bin/pretrain_gpt" "${common[@]}" "${pa[@]}" --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16 --load "$tmp/ck" \
  --metrics-file "$tmp/resumed.jsonl" > "$tmp/resumed.log" 2>&1 || { cat "$tmp/resumed.log"; fail "resume"; }
losses "$tmp/resumed.jsonl" > "$tmp/resumed.losses"
diff <(awk '$1 > 4' "$tmp/bf16.losses") "$tmp/resumed.losses" || fail "the resumed bf16-moment run differs"
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ck" --metrics-file "$tmp/resumed32.jsonl" > "$tmp/resumed32.log" 2>&1 ||
  { cat "$tmp/resumed32.log"; fail "resume with fp32 moments"; }
echo "bf16 moments: resumed bit for bit; the checkpoint also resumes with fp32 moments"
echo "PASS"
