#!/usr/bin/env bash
# The plan accounts for offloading. --dry-run of Megatron's GPT-3 175B shape (the layout of
# recompute_plan.sh: TP 8 x PP 16, sequence parallel, bf16, distributed optimizer over DP 8) with
# --cpu-offloading-num-layers 5 and --optimizer-cpu-offload: stage 0's plan line names the host bytes,
# and the device bytes each offload saves are exactly the difference to the plan without it. With
# --dry-run-device-memory a plan that does not fit names the offloading that fits with the least
# copying, and the advice is right (the advised flags plan within that memory). A GPT-2 1.5B-sized
# model on one GPU without the distributed optimizer, whose states do not fit, gets optimizer offloading
# as advice. Megatron's rules for the flags are checked. ~10 s.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
P=$GPTRAIN_BIN/pretrain_gpt
G=(--num-layers 96 --hidden-size 12288 --num-attention-heads 96 --seq-length 2048 --max-position-embeddings 2048
  --micro-batch-size 1 --global-batch-size 1536 --train-iters 10 --lr 6e-5 --tensor-model-parallel-size 8
  --pipeline-model-parallel-size 16 --sequence-parallel --bf16 --mock-data --vocab-size 50257 --dry-run
  --device cuda --use-distributed-optimizer --dry-run-world-size 1024)
plan() { grep -m1 "memory plan, pipeline stage 0 of" "$1"; }
"$P" "${G[@]}" >"$GPTRAIN_TMP/none.log" 2>&1 || { cat "$GPTRAIN_TMP/none.log"; exit 1; }
"$P" "${G[@]}" --cpu-offloading-num-layers 5 --optimizer-cpu-offload >"$GPTRAIN_TMP/off.log" 2>&1 ||
  { cat "$GPTRAIN_TMP/off.log"; exit 1; }
python3 - "$(plan "$GPTRAIN_TMP/none.log")" "$(plan "$GPTRAIN_TMP/off.log")" <<'PY'
import re, sys
none, off = sys.argv[1], sys.argv[2]
def size(line, pat):
    m = re.search(pat + r" ([0-9.]+) (MiB|GiB)", line)
    assert m, f"no '{pat}' in: {line}"
    return float(m.group(1)) * (1024 if m.group(2) == "GiB" else 1)
total0, total1 = size(none, ", total"), size(off, ", total")
saved_act = size(off, r"device saves")
saved_opt = size(off, r"100% of the optimizer state [0-9.]+ [MG]iB \(device saves")
host_act = size(off, r"activations of the first 5 layers")
assert "host memory" not in none, none
assert abs((total0 - total1) - (saved_act + saved_opt)) < 0.02 * 1024, (total0, total1, saved_act, saved_opt)
assert host_act > saved_act > 0, (host_act, saved_act)
assert size(off, r"optimizer state") == 0.0, off
print(f"175B stage 0: total {total0/1024:.2f} -> {total1/1024:.2f} GiB; activations of 5 layers on the host "
      f"{host_act/1024:.2f} GiB (device saves {saved_act/1024:.2f} GiB after the 3 staging slots), optimizer state "
      f"saves {saved_opt:.2f} MiB")
PY
# advised NAME GIB FLAGS...: the plan of FLAGS fails --dry-run-device-memory GIB naming offloading, and the
# advised offloading fits; sets $advice.
advised() {
  local name=$1 gib=$2
  shift 2
  if "$P" "$@" --dry-run-device-memory "$gib" >"$GPTRAIN_TMP/$name.log" 2>&1; then
    echo "FAIL: $name: the plan fits $gib GiB without offloading"
    exit 1
  fi
  advice=$(grep -o "offload to host memory: [^;(]*" "$GPTRAIN_TMP/$name.log" | sed 's/offload to host memory: //') ||
    { cat "$GPTRAIN_TMP/$name.log"; echo "FAIL: $name: no offloading advice"; exit 1; }
  echo "$name at $gib GiB: offload to host memory: $advice"
  # shellcheck disable=SC2086
  "$P" "$@" --dry-run-device-memory "$gib" $advice >"$GPTRAIN_TMP/advised.log" 2>&1 ||
    { cat "$GPTRAIN_TMP/advised.log"; echo "FAIL: $name: the advised $advice does not fit"; exit 1; }
}
advised 175B 35 "${G[@]}"
# States that do not fit: the optimizer offload is the advice (GPT-2 1.5B-like, one GPU, bf16).
X=(--num-layers 48 --hidden-size 1600 --num-attention-heads 25 --seq-length 1024 --max-position-embeddings 1024
  --micro-batch-size 1 --global-batch-size 8 --train-iters 10 --lr 1e-4 --bf16 --mock-data --vocab-size 50257
  --dry-run --device cuda)
advised 1.5B 20 "${X[@]}"
case "$advice" in *--optimizer-cpu-offload*) ;; *) echo "FAIL: the states need the optimizer offload"; exit 1 ;; esac
# Megatron's rules, each refused naming the flag.
refused() {  # refused TEXT FLAGS...
  local want=$1
  shift
  if "$P" "${X[@]}" "$@" >"$GPTRAIN_TMP/r.log" 2>&1 || ! grep -q -- "$want" "$GPTRAIN_TMP/r.log"; then
    cat "$GPTRAIN_TMP/r.log"
    echo "FAIL: $* should be refused with '$want'"
    exit 1
  fi
}
refused "layers less than --num-layers 48" --cpu-offloading-num-layers 48
refused "--cpu-offloading needs --cpu-offloading-num-layers" --cpu-offloading
refused "--optimizer-offload-fraction applies with --optimizer-cpu-offload" --optimizer-offload-fraction 0.5
refused "--optimizer-offload-fraction must be in \[0, 1\]" --optimizer-cpu-offload --optimizer-offload-fraction 1.5
refused "overlapping the offloaded optimizer" --optimizer-cpu-offload --overlap-cpu-optimizer-d2h-h2d
echo "offload_plan: host bytes and device savings in the plan; the offloading advice fits; Megatron's rules refused"
