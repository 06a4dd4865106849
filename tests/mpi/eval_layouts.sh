#!/usr/bin/env bash
# Evaluation across layouts: --full-validation over a real validation split of an odd number of samples
# (rank 1's last micro-batch is padding at DP 2) and --eval-global-batch-size 8 test batches, run by
# --skip-train from one checkpoint, give one process's validation and test losses (2e-6 relative) at DP 2
# and PP 2. ~4 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/pretrain_gpt
source "$GPTRAIN_SRC/tests/integration/number_corpus.bash"
number_corpus docs
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 2 --global-batch-size 4 --train-iters 2 --lr 1e-2 --data-path docs_text_document
  --split 60,30,10 --tokenizer-type NullTokenizer --vocab-size 96 --log-interval 1 --seed 7
  --distributed-timeout-minutes 1)
"$bin" "${common[@]}" --save ck --save-interval 2 --eval-iters 0 > train.log 2>&1 || { tail -5 train.log; exit 1; }
evalf=(--load ck --skip-train --full-validation --eval-iters 1 --eval-global-batch-size 8)
"$bin" "${common[@]}" "${evalf[@]}" --metrics-file single.jsonl > single.log 2>&1 || { tail -5 single.log; exit 1; }
n=$(grep -o "full validation: [0-9]* samples" single.log | grep -o "[0-9]*" || true)
[ -n "$n" ] && [ $((n % 4)) != 0 ] || { echo "FAIL: the validation split has '$n' samples, not a partial DP 2 round"; exit 1; }
fail=0
for flags in "" "--pipeline-model-parallel-size 2"; do
  rm -f par.jsonl  # a run from a checkpoint appends to its metrics file
  # shellcheck disable=SC2086
  mpirun_n 2 "$bin" "${common[@]}" "${evalf[@]}" $flags --metrics-file par.jsonl > par.log 2>&1 ||
    { tail -20 par.log; exit 1; }
  if python3 - single.jsonl par.jsonl <<'PY'
import json, sys
def evals(p):
    return [(r["event"], r["losses"]["lm loss"]) for r in map(json.loads, open(p)) if r["event"] in ("validation", "test")]
a, b = evals(sys.argv[1]), evals(sys.argv[2])
assert len(a) == 2 and [e for e, _ in a] == [e for e, _ in b], (a, b)
err = max(abs(x - y) / abs(x) for (_, x), (_, y) in zip(a, b))
print(f"max rel err {err:.2e}")
sys.exit(0 if err < 2e-6 else 1)
PY
  then echo "ok: 2 ranks ${flags:-DP 2}: validation over $n samples and test as one process"
  else echo "FAIL: 2 ranks ${flags:-DP 2}"; fail=1; fi
done
exit $fail
