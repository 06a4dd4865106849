#!/usr/bin/env bash
# --moe-use-upcycling under mpirun: a dense checkpoint saved by one process is upcycled (4 experts top-2) at
# EP 2 (x DP 2), TP 2 and PP 2; each layout reads its pieces of the copied MLPs and gives the one-process
# upcycled losses (4 iterations) within 1e-6 relative (other layouts sum in another order). ~6 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
bin=$GPTRAIN_BIN/pretrain_gpt
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --min-lr 1e-3 --lr-warmup-iters 1
        --lr-decay-style cosine --mock-data --vocab-size 97 --log-interval 1 --eval-interval 1000 --eval-iters 1
        --seed 7 --hidden-dropout 0 --attention-dropout 0 --normalization RMSNorm --swiglu
        --position-embedding-type rope --disable-bias-linear --ffn-hidden-size 48 --train-iters 4
        --distributed-timeout-minutes 1)
"$bin" "${common[@]}" --save "$tmp/dense" --save-interval 100 --exit-interval 3 > "$tmp/dense.log" 2>&1 ||
  { cat "$tmp/dense.log"; exit 1; }
up() {  # up NAME NP FLAGS...: an upcycled run of the dense checkpoint, its metrics in $tmp/NAME.jsonl
  local name=$1 n=$2
  shift 2
  local cmd=("$bin" "${common[@]}" --num-experts 4 --moe-router-topk 2 --load "$tmp/dense" --save "$tmp/$name"
             --save-interval 100 --moe-use-upcycling --metrics-file "$tmp/$name.jsonl" "$@")
  if [ "$n" = 1 ]; then "${cmd[@]}" > "$tmp/$name.log" 2>&1; else mpirun_n "$n" "${cmd[@]}" > "$tmp/$name.log" 2>&1; fi ||
    { cat "$tmp/$name.log"; exit 1; }
}
up one 1
up ep2 2 --expert-model-parallel-size 2
up tp2 2 --tensor-model-parallel-size 2
up pp2 2 --pipeline-model-parallel-size 2
python3 - "$tmp" <<'PY'
import json, sys
def losses(name):
    return {r["iteration"]: r["losses"]["lm loss"] for r in map(json.loads, open(f"{sys.argv[1]}/{name}.jsonl"))
            if r.get("event") == "train"}
ref = losses("one")
assert sorted(ref) == [1, 2, 3, 4], ref
for name in ("ep2", "tp2", "pp2"):
    got = losses(name)
    assert sorted(got) == sorted(ref), (name, got)
    err = max(abs(got[k] - ref[k]) / abs(ref[k]) for k in ref)
    print(f"{name}: max rel loss err {err:.3e}")
    assert err <= 1e-6, f"{name}: the upcycled losses differ from one process's"
PY
echo "upcycling at EP 2, TP 2 and PP 2 gives the one-process losses"
