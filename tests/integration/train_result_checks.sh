#!/usr/bin/env bash
# Result checks on real runs (mock data, CPU):
# 1. default (--check-for-nan-in-loss-and-grad, as Megatron): --lr 1e10 makes iteration 2's loss NaN; the
#    run stops with rc != 0 naming iteration 2;
# 2. --no-check-for-nan-in-loss-and-grad: the same run trains on to its end (rc 0), logging a NaN
#    gradient norm;
# 3. an LR warming up to 10 keeps the first 100 iterations calm and then explodes (loss ~5.5 -> 50+):
#    without the checks the run ends with rc 0; --check-for-spiky-loss stops it at an iteration > 100
#    whose loss is >= 10x the reference printed, and --check-for-large-grads likewise for the grad norm;
#    the stop comes no later than the first logged line whose value passes the threshold. ~15 s.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
M=(--device cpu --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 32
  --micro-batch-size 2 --global-batch-size 4 --seed 7 --mock-data --vocab-size 250 --eval-iters 0 --clip-grad 0)
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() {  # run NAME FLAGS...: sets rc
  local name=$1
  shift
  set +e
  "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" "$@" >"$name.log" 2>&1
  rc=$?
  set -e
}

echo "== 1-2. NaN loss: stop by default, train on with --no-check-for-nan-in-loss-and-grad"
run nan_default --train-iters 6 --lr 1e10 --log-interval 1
[ $rc -ne 0 ] || bad "a NaN loss did not stop the run"
grep -qE "error: iteration 2: the loss is -?nan" nan_default.log || { cat nan_default.log; bad "no message naming iteration 2"; }
run nan_off --train-iters 6 --lr 1e10 --log-interval 1 --no-check-for-nan-in-loss-and-grad
[ $rc -eq 0 ] || { cat nan_off.log; bad "--no-check-for-nan-in-loss-and-grad still stopped (rc $rc)"; }
grep -q "iteration        6/       6" nan_off.log || bad "--no-check-for-nan-in-loss-and-grad did not reach iteration 6"
grep -qE "grad norm: -?nan" nan_off.log || bad "no NaN gradient norm logged"

echo "== 3. spiky loss and large gradient norms after the first 100 iterations"
W=(--train-iters 1000 --lr 10 --lr-warmup-iters 10000 --lr-decay-iters 20000 --lr-decay-style constant --log-interval 1)
run calm "${W[@]}"
[ $rc -eq 0 ] || { tail -3 calm.log; bad "the run without checks failed (rc $rc)"; }
for kind in spiky-loss large-grads; do
  run "$kind" "${W[@]}" --check-for-$kind
  [ $rc -ne 0 ] || { bad "--check-for-$kind did not stop the run"; continue; }
  python3 - "$kind" calm.log "$kind.log" <<'PY' || bad "--check-for-$kind stopped at the wrong place"
import re, sys
kind, calm, log = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read()
m = re.search(r"error: iteration (\d+): (?:spiky loss|unexpectedly large gradient norm) ([0-9.E+-]+), at least 10x .*? \(([0-9.E+-]+)\)", log)
assert m, log[-2000:]
it, value, ref = int(m[1]), float(m[2]), float(m[3])
field = "lm loss" if kind == "spiky-loss" else "grad norm"
series = [float(v) for v in re.findall(field + r": ([0-9.E+-]+) \|", calm)]
assert it > 100 and value >= 10 * ref, (it, value, ref)
assert ref == max(series[:100]) or abs(ref - max(series[:100])) <= 1e-3 * ref, (ref, max(series[:100]))
first = next(i + 1 for i, v in enumerate(series) if i >= 100 and v >= 10 * ref)
assert it == first, (it, first)
print(f"--check-for-{kind}: stopped at iteration {it}, value {value:g} >= 10 x {ref:g}")
PY
done
[ $fails -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
