#!/usr/bin/env bash
# --grad-reduce-in-bf16: the data-parallel gradient buckets are scaled by 1/DP, rounded to bf16, summed
# in bf16 and widened back. Each rank's gradients before and after the reduction of iteration 1
# (mpi_train_check --dump-grads, plain DP, several buckets) against a numpy simulation
# (tests/python/grad_reduce_bf16_ref.py): the fp32 reduction bitwise the fp32 sum (so the simulation
# models the path), the bf16 one bitwise the bf16 sum of the ranks' gradients, within bf16 rounding of
# the exact mean and different from fp32; DP4 with --deterministic-mode bitwise the rank-ordered bf16 sum;
# the printed gradient norm the simulated one. Then: the distributed optimizer's reduce-scatter and
# --overlap-grad-reduce give the same norm (iteration 1) and the same bits as the plain bf16 reduction
# after backward; losses over 10 iterations are finite and within 1e-2 of the fp32 run's; DP1 prints the
# same bits with and without the flag; pretrain_gpt says what the flag does. ~40 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
ref=("$GPTRAIN_PYTHON" "$GPTRAIN_SRC/tests/python/grad_reduce_bf16_ref.py")
common=(--train-iters 10 --global-batch-size 8 --micro-batch-size 2 --distributed-timeout-minutes 1 --print-bits
  --ddp-bucket-size 1000)
bf=--grad-reduce-in-bf16
# bits FILE: the iteration lines' exact fields (iteration, hex loss, hex norm).
norm1() { awk '$1 == "iter" && $2 == 1 { print $9 }' "$1"; }
fail=0
# run NAME NP FLAGS...: mpi_train_check into $GPTRAIN_TMP/NAME.txt, gradients into $GPTRAIN_TMP/NAME/ (the
# overlapped runs' "local" dumps are taken after their reduction started: only their printed bits count)
run() {
  local name=$1 n=$2
  shift 2
  mkdir -p "$GPTRAIN_TMP/$name"
  mpirun_n "$n" "$bin" "${common[@]}" --dump-grads "$GPTRAIN_TMP/$name" "$@" > "$GPTRAIN_TMP/$name.txt" 2>&1 ||
    { tail "$GPTRAIN_TMP/$name.txt"; exit 1; }
}
verdict() {  # verdict OK DESCRIPTION
  if [ "$1" = ok ]; then echo "$2: ok"; else echo "$2: FAIL"; fail=1; fi
}

run fp32 2
run bf16 2 $bf
run bf16_overlap 2 $bf --overlap-grad-reduce
run bf16_dist 2 $bf --use-distributed-optimizer
run bf16_dist_overlap 2 $bf --use-distributed-optimizer --overlap-grad-reduce
run bf16_dp4_det 4 $bf --deterministic-mode
run dp1 1
run dp1_bf16 1 $bf

"${ref[@]}" --dir "$GPTRAIN_TMP/fp32" --ranks 2 --mode fp32 --norm "$(norm1 "$GPTRAIN_TMP/fp32.txt")" || fail=1
"${ref[@]}" --dir "$GPTRAIN_TMP/bf16" --ranks 2 --mode bf16 --norm "$(norm1 "$GPTRAIN_TMP/bf16.txt")" || fail=1
"${ref[@]}" --dir "$GPTRAIN_TMP/bf16_dp4_det" --ranks 4 --mode bf16 --norm "$(norm1 "$GPTRAIN_TMP/bf16_dp4_det.txt")" ||
  fail=1

# The distributed optimizer reduce-scatters the same bf16 sums: iteration 1's norm is the simulated one.
"${ref[@]}" --dir "$GPTRAIN_TMP/bf16" --ranks 2 --mode bf16 --norm "$(norm1 "$GPTRAIN_TMP/bf16_dist.txt")" > /dev/null &&
  ok=ok || ok=FAIL
verdict $ok "DP2 --use-distributed-optimizer $bf: iteration 1 gradient norm $(norm1 "$GPTRAIN_TMP/bf16_dist.txt") = the simulated bf16 reduction's"
for pair in "bf16 bf16_overlap" "bf16_dist bf16_dist_overlap"; do
  read -r a b <<< "$pair"
  ok=FAIL
  [ "$(bits "$GPTRAIN_TMP/$a.txt" | wc -l)" -eq 10 ] && cmp -s <(bits "$GPTRAIN_TMP/$a.txt") <(bits "$GPTRAIN_TMP/$b.txt") &&
    ok=ok
  verdict $ok "$bf: $b prints the bits of $a (10 iterations)"
done
# Losses: finite, close to fp32's, not identical to them.
err=$(max_rel_err "$GPTRAIN_TMP/fp32.txt" "$GPTRAIN_TMP/bf16.txt")
finite=$(awk '$1 == "iter" && ($4 != $4 + 0 || $6 != $6 + 0 || $4 ~ /nan|inf/) { bad++ } END { print bad + 0 }' \
  "$GPTRAIN_TMP/bf16.txt" "$GPTRAIN_TMP/bf16_dist.txt")
ok=$(awk -v e="$err" -v f="$finite" 'BEGIN { print (e < 1e-2 && e > 0 && f == 0) ? "ok" : "FAIL" }')
verdict "$ok" "DP2 $bf: 10 losses finite, max relative difference to the fp32 reduction $err (0 < err < 1e-2)"
# DP1: nothing is reduced, so nothing changes.
ok=FAIL
cmp -s <(bits "$GPTRAIN_TMP/dp1.txt") <(bits "$GPTRAIN_TMP/dp1_bf16.txt") && [ "$(bits "$GPTRAIN_TMP/dp1.txt" | wc -l)" -eq 10 ] &&
  cmp -s "$GPTRAIN_TMP/dp1/reduced_0.f32" "$GPTRAIN_TMP/dp1_bf16/reduced_0.f32" && ok=ok
verdict $ok "DP1 $bf: the same bits and gradients as without"

# pretrain_gpt takes the flag and says what it does.
pg=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 2 --global-batch-size 8 --train-iters 3 --lr 1e-2 --mock-data --vocab-size 250 --log-interval 1
  --eval-iters 0 --distributed-timeout-minutes 1 $bf)
mpirun_n 2 "$GPTRAIN_BIN/pretrain_gpt" "${pg[@]}" > "$GPTRAIN_TMP/pg2.log" 2>&1 || { tail "$GPTRAIN_TMP/pg2.log"; exit 1; }
"$GPTRAIN_BIN/pretrain_gpt" "${pg[@]}" > "$GPTRAIN_TMP/pg1.log" 2>&1 || { tail "$GPTRAIN_TMP/pg1.log"; exit 1; }
ok=FAIL
grep -q "data parallel 2: .* reduced after backward in bf16 (--grad-reduce-in-bf16)" "$GPTRAIN_TMP/pg2.log" &&
  grep -q "data parallel 1: no gradient reduction (--grad-reduce-in-bf16 has nothing to reduce: no effect)" \
    "$GPTRAIN_TMP/pg1.log" && [ "$(grep -c "lm loss" "$GPTRAIN_TMP/pg2.log")" -eq 3 ] && ok=ok
verdict $ok "pretrain_gpt $bf: DP2 reduces in bf16, DP1 says it has no effect"
exit $fail
