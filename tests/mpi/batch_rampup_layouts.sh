#!/usr/bin/env bash
# Batch-size ramp-up across layouts: DP2 (each rank takes its share of every iteration's batch), DP2 with
# the distributed optimizer, and PP2 (the pipeline runs a varying number of micro-batches) print the same
# per-iteration losses and grad norms as one process (2e-6 relative), with the same global batch
# sizes and consumed samples, which follow Megatron's rule at DP 2. ~30 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/pretrain_gpt
py=${GPTRAIN_PYTHON:-python3}
# 16 from 4 by 4 over 32 samples (4, 8, 12, 16; multiples of mbs 2 x DP 2), dropout off.
common=(--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 2 --global-batch-size 16 --rampup-batch-size 4 4 32 --train-samples 120 --lr 1e-2
  --lr-warmup-samples 8 --lr-decay-style cosine --mock-data --vocab-size 250 --log-interval 1 --eval-interval 4
  --eval-iters 1 --seed 7 --hidden-dropout 0 --attention-dropout 0 --distributed-timeout-minutes 1)
"$bin" "${common[@]}" --metrics-file "$GPTRAIN_TMP/single.jsonl" > "$GPTRAIN_TMP/single.log"
"$py" "$GPTRAIN_SRC/tests/python/batch_schedule_check.py" schedule "$GPTRAIN_TMP/single.jsonl" --gbs 16 --mbs 2 \
  --dp 2 --train-samples 120 --rampup 4 4 32
fail=0
for spec in "2|--use-distributed-optimizer" "2|" "2|--pipeline-model-parallel-size 2"; do
  n=${spec%%|*}
  flags=${spec#*|}
  # shellcheck disable=SC2086
  mpirun_n "$n" "$bin" "${common[@]}" $flags --metrics-file "$GPTRAIN_TMP/par.jsonl" > "$GPTRAIN_TMP/par.log" 2>&1 ||
    { tail -20 "$GPTRAIN_TMP/par.log"; exit 1; }
  res=$("$py" - "$GPTRAIN_TMP/single.jsonl" "$GPTRAIN_TMP/par.jsonl" <<'PY'
import json, sys
def train(p):
    return {r["iteration"]: r for r in map(json.loads, open(p)) if r["event"] == "train"}
a, b = train(sys.argv[1]), train(sys.argv[2])
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
err = 0.0
for it in a:
    for k in ("global_batch_size", "consumed_samples", "train_iters"):
        assert a[it][k] == b[it][k], (it, k, a[it][k], b[it][k])
    for x, y in ((a[it]["losses"]["lm loss"], b[it]["losses"]["lm loss"]), (a[it]["grad_norm"], b[it]["grad_norm"])):
        err = max(err, abs(x - y) / abs(x))
print(f"{err:.3e} {'ok' if err <= 2e-6 else 'FAIL'} {sorted({r['global_batch_size'] for r in a.values()})}")
PY
  ) || { echo "np=$n $flags: batch sizes or iterations differ"; fail=1; continue; }
  printf 'ramp-up np=%s %-40s max rel loss/grad-norm err, batch sizes: %s\n' "$n" "$flags" "$res"
  case $res in *FAIL*) fail=1 ;; esac
done
exit $fail
