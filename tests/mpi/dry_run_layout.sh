#!/usr/bin/env bash
# pretrain_gpt --dry-run under mpirun (TP2 x PP2, 4 ranks, untied GPT-J-style model with
# --disable-bias-attention): exits 0, only rank 0 prints, its per-stage memory plans are the ones a real
# 1-iteration run of the same layout prints before step 1, and every stage's parameter count equals the
# elements of the checkpoint piece model_tp00_pp00R.safetensors that run writes (the plan describes the
# shards the ranks really hold). A single process with --dry-run-world-size 4 prints the same plan. Then TP 2 x
# CP 2: a single-process --dry-run (world TP x PP x CP by default) prints the plan a real 4-rank run prints,
# the context-parallel K/V exchange buffers and bytes sent per step included. ~15 s.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/pretrain_gpt
model=(--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --position-embedding-type rope --rotary-percent 0.5 --rotary-interleaved --parallel-residual shared_norm
  --untie-embeddings-and-output-weights --output-layer-bias --disable-bias-attention
  --micro-batch-size 2 --global-batch-size 8 --train-iters 1 --lr 1e-3 --mock-data --vocab-size 250
  --log-interval 1 --eval-iters 0 --distributed-timeout-minutes 1 --tensor-model-parallel-size 2
  --pipeline-model-parallel-size 2)

mpirun_n 4 "$bin" "${model[@]}" --dry-run > "$GPTRAIN_TMP/dry_mpi.log" 2>&1 || { cat "$GPTRAIN_TMP/dry_mpi.log"; exit 1; }
grep -q "pipeline stage 1 of 2" "$GPTRAIN_TMP/dry_mpi.log" || { echo "no per-rank plan"; cat "$GPTRAIN_TMP/dry_mpi.log"; exit 1; }
if grep -v '^\[rank 0\]' "$GPTRAIN_TMP/dry_mpi.log" | grep -q "dry-run"; then
  echo "FAIL: a rank other than 0 printed the plan"; cat "$GPTRAIN_TMP/dry_mpi.log"; exit 1
fi
"$bin" "${model[@]}" --dry-run --dry-run-world-size 4 > "$GPTRAIN_TMP/dry_single.log" 2>&1 || { cat "$GPTRAIN_TMP/dry_single.log"; exit 1; }
if ! diff <(sed 's/^\[rank 0\] //' "$GPTRAIN_TMP/dry_mpi.log" | grep "dry-run") <(grep "dry-run" "$GPTRAIN_TMP/dry_single.log"); then
  echo "FAIL: the single-process plan for 4 processes differs from the mpirun plan"; exit 1
fi

mpirun_n 4 "$bin" "${model[@]}" --save "$GPTRAIN_TMP/ckpt" --save-interval 1 > "$GPTRAIN_TMP/run.log" 2>&1 ||
  { tail -20 "$GPTRAIN_TMP/run.log"; exit 1; }
python3 - "$GPTRAIN_TMP/dry_single.log" "$GPTRAIN_TMP/run.log" "$GPTRAIN_TMP/ckpt/iter_0000001" <<'PY'
import json, math, os, re, sys
dry, run, ck = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
plan_re = r"(memory plan, pipeline stage \d+ of \d+ .*?, total [\d.]+ [MG]iB)"
dry_plans, run_plans = re.findall(plan_re, dry), re.findall(plan_re, run)
assert len(dry_plans) == 2 and dry_plans == run_plans, f"--dry-run plans {dry_plans}\nrun's plans {run_plans}"
print("--dry-run prints the run's per-stage plans:", *dry_plans, sep="\n  ")
plan = {int(r): int(n) for r, n in re.findall(r"memory plan, pipeline stage (\d+) of 2 \(per rank, TP 2\): (\d+) parameters", dry)}
assert sorted(plan) == [0, 1], f"per-stage counts not found: {plan}"
for r, n in plan.items():
    with open(os.path.join(ck, f"model_tp00_pp{r:03d}.safetensors"), "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    held = sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
    assert held == n, f"pipeline stage {r}: --dry-run says {n} parameters, the checkpoint piece holds {held}"
    print(f"pipeline stage {r}: --dry-run {n} parameters per TP rank = checkpoint piece tp00_pp{r:03d}")
PY

cp_model=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 2 --global-batch-size 4 --train-iters 1 --lr 1e-3 --mock-data --vocab-size 250 --log-interval 1
  --eval-iters 0 --distributed-timeout-minutes 1 --tensor-model-parallel-size 2 --sequence-parallel
  --context-parallel-size 2)
"$bin" "${cp_model[@]}" --dry-run > "$GPTRAIN_TMP/dry_cp.log" 2>&1 || { cat "$GPTRAIN_TMP/dry_cp.log"; exit 1; }
mpirun_n 4 "$bin" "${cp_model[@]}" > "$GPTRAIN_TMP/run_cp.log" 2>&1 || { tail -20 "$GPTRAIN_TMP/run_cp.log"; exit 1; }
python3 - "$GPTRAIN_TMP/dry_cp.log" "$GPTRAIN_TMP/run_cp.log" <<'PY'
import re, sys
dry, run = open(sys.argv[1]).read(), open(sys.argv[2]).read()
plan_re = r"(memory plan, pipeline stage .*?context parallel 2: [\d.]+ [MG]iB sent per step in the K/V ring)"
d, r = re.findall(plan_re, dry), re.findall(plan_re, run)
assert len(d) == 1 and d == r, f"--dry-run CP plan {d}\nrun's {r}"
assert "context-parallel K/V exchange buffers" in d[0] and "TP 2 x CP 2 x PP 1 x DP 1" in dry, dry
print("TP 2 x CP 2: --dry-run prints the run's plan:", d[0])
PY
echo "PASS"
