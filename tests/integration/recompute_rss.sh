#!/usr/bin/env bash
# Recomputation really shrinks a run's memory as the plan says: a 12-layer CPU run with full
# recomputation of all 12 layers (--recompute-granularity full --recompute-method uniform
# --recompute-num-layers 1) and the same run keeping every activation print the same losses; the drop
# of their peak resident memory (measured by /usr/bin/time) is within 10% of the drop of the planned
# activations (the memory plan line each run prints before step 1). Also selective (core_attn, mlp).
# ~20 s on 2 cores.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
[ -x /usr/bin/time ] || { echo "skip: /usr/bin/time (GNU time) is not installed"; exit 77; }
export OMP_NUM_THREADS=1
P=(--num-layers 12 --hidden-size 128 --num-attention-heads 4 --seq-length 256 --max-position-embeddings 256
  --micro-batch-size 8 --global-batch-size 8 --train-iters 2 --lr 1e-3 --mock-data --vocab-size 500
  --log-interval 1 --eval-iters 0 --device cpu)
run() {  # run NAME flags...: the log, and NAME.rss (peak resident KiB)
  local name=$1
  shift
  /usr/bin/time -f "%M" -o "$GPTRAIN_TMP/$name.rss" "$GPTRAIN_BIN/pretrain_gpt" "${P[@]}" "$@" \
    >"$GPTRAIN_TMP/$name.log" 2>&1 || { cat "$GPTRAIN_TMP/$name.log"; exit 1; }
}
run none
run full --recompute-granularity full --recompute-method uniform --recompute-num-layers 1
run selective --recompute-granularity selective --recompute-modules core_attn mlp
planned() { grep -m1 "memory plan, " "$GPTRAIN_TMP/$1.log" | sed -E 's/.* activations ([0-9.]+) MiB .*/\1/'; }
losses() { sed -E -n 's/.*iteration +([0-9]+)\/.*lm loss: ([0-9.E+-]+).*grad norm: ([0-9.]+).*/\1 \2 \3/p' "$GPTRAIN_TMP/$1.log"; }
fail=0
for rc in full selective; do
  [ "$(losses none | wc -l)" = 2 ] && [ "$(losses none)" = "$(losses $rc)" ] ||
    { echo "FAIL: $rc: losses differ from the run keeping every activation"; paste <(losses none) <(losses $rc); fail=1; }
  python3 - "$rc" "$(planned none)" "$(planned $rc)" "$(tail -1 "$GPTRAIN_TMP/none.rss")" \
    "$(tail -1 "$GPTRAIN_TMP/$rc.rss")" <<'PY' || fail=1
import sys
name, plan_none, plan_rc, rss_none, rss_rc = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), \
    int(sys.argv[4]) / 1024, int(sys.argv[5]) / 1024
planned, measured = plan_none - plan_rc, rss_none - rss_rc
rel = abs(measured - planned) / planned
print(f"{name}: planned activations {plan_none:.2f} -> {plan_rc:.2f} MiB (-{planned:.2f}); peak RSS "
      f"{rss_none:.2f} -> {rss_rc:.2f} MiB (-{measured:.2f}); {100 * rel:.1f}% apart")
if planned <= 0 or rel > 0.10:
    sys.exit(f"FAIL: {name}: the measured drop is not within 10% of the planned one")
PY
done
exit "$fail"
