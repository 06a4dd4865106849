#!/usr/bin/env bash
# A checkpoint saved at TP2 x PP2 (iteration 5) resumes at TP1 x PP1, at DP2, and at DP2 with the
# distributed optimizer (model and optimizer state resharded) with the next iterations' losses equal
# to the uninterrupted TP2 x PP2 run's within 1e-6 relative. GPT-2 (tied embeddings: the last stage's
# copy is not saved twice; resumed at TP4 too, whose vocabulary padding is 512 rows instead of 256) and
# Llama (untied, GQA, SwiGLU row blocks). A vocabulary padded differently at TP2 and TP1. Then a save from DP2 with the distributed optimizer (moments
# gathered over DP) resumes in one process. ~1 min on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
common=(--train-iters 8 --global-batch-size 8 --micro-batch-size 2 --distributed-timeout-minutes 1)
fail=0
for arch in gpt2 llama; do
  ck=$GPTRAIN_TMP/ck_$arch
  mpirun_n 4 "$bin" --arch "$arch" "${common[@]}" --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 \
    --save "$ck" --save-at 5 > "$GPTRAIN_TMP/full_$arch.txt" 2>&1 || { cat "$GPTRAIN_TMP/full_$arch.txt"; exit 1; }
  test "$(cat "$ck/latest_checkpointed_iteration.txt")" = 5
  ls "$ck/iter_0000005/model_tp01_pp001.safetensors" "$ck/iter_0000005/optim_tp01_pp001_dp000.safetensors" > /dev/null
  specs=("1|" "2|" "2|--use-distributed-optimizer" "2|--tensor-model-parallel-size 2")
  [ "$arch" = gpt2 ] && specs+=("4|--tensor-model-parallel-size 4")
  for spec in "${specs[@]}"; do
    n=${spec%%|*}
    flags=${spec#*|}
    out=$GPTRAIN_TMP/resume.txt
    # shellcheck disable=SC2086
    mpirun_n "$n" "$bin" --arch "$arch" "${common[@]}" --load "$ck" $flags > "$out" 2>&1 || { cat "$out"; exit 1; }
    grep -q "loaded iteration 5" "$out"
    if grep -q "^iter [1-5] " "$out"; then echo "resumed run repeated iterations"; exit 1; fi
    err=$(max_rel_err "$GPTRAIN_TMP/full_$arch.txt" "$out" 6)
    ok=$(awk -v e="$err" 'BEGIN { print (e <= 1e-6) ? "ok" : "FAIL" }')
    printf '%-6s TP2xPP2 -> np=%s %-45s iters 6-8 max rel loss err %s %s\n' "$arch" "$n" "${flags:-(TP1 PP1, DP=np)}" "$err" "$ok"
    [ "$ok" = ok ] || fail=1
  done
done
# Vocabulary 300 pads to 512 rows at TP2 and 384 at TP1: a TP2 x PP2 save (model and Adam moments padded
# for TP2) resumes at TP1 with the default flags.
ck=$GPTRAIN_TMP/ck_vocab300
mpirun_n 4 "$bin" --arch gpt2 "${common[@]}" --vocab-size 300 --tensor-model-parallel-size 2 \
  --pipeline-model-parallel-size 2 --save "$ck" --save-at 5 > "$GPTRAIN_TMP/full_vocab300.txt" 2>&1 ||
  { cat "$GPTRAIN_TMP/full_vocab300.txt"; exit 1; }
"$bin" --arch gpt2 "${common[@]}" --vocab-size 300 --load "$ck" > "$GPTRAIN_TMP/resume.txt" 2>&1 ||
  { cat "$GPTRAIN_TMP/resume.txt"; exit 1; }
grep -q "loaded iteration 5" "$GPTRAIN_TMP/resume.txt"
err=$(max_rel_err "$GPTRAIN_TMP/full_vocab300.txt" "$GPTRAIN_TMP/resume.txt" 6)
ok=$(awk -v e="$err" 'BEGIN { print (e <= 1e-6) ? "ok" : "FAIL" }')
printf 'gpt2   vocab 300, TP2xPP2 (512 rows) -> TP1 (384 rows) iters 6-8 max rel loss err %s %s\n' "$err" "$ok"
[ "$ok" = ok ] || fail=1
# Distributed-optimizer save (each DP rank holds a shard of the moments) -> one process.
ck=$GPTRAIN_TMP/ck_distopt
mpirun_n 2 "$bin" --arch llama "${common[@]}" --use-distributed-optimizer --save "$ck" --save-at 4 \
  > "$GPTRAIN_TMP/full_distopt.txt" 2>&1 || { cat "$GPTRAIN_TMP/full_distopt.txt"; exit 1; }
"$bin" --arch llama "${common[@]}" --load "$ck" > "$GPTRAIN_TMP/resume.txt" 2>&1 || { cat "$GPTRAIN_TMP/resume.txt"; exit 1; }
err=$(max_rel_err "$GPTRAIN_TMP/full_distopt.txt" "$GPTRAIN_TMP/resume.txt" 5)
ok=$(awk -v e="$err" 'BEGIN { print (e <= 1e-6) ? "ok" : "FAIL" }')
printf 'llama  DP2 + distributed optimizer -> np=1 iters 5-8 max rel loss err %s %s\n' "$err" "$ok"
[ "$ok" = ok ] || fail=1
exit $fail
