#!/usr/bin/env bash
# bf16-stored Adam moments (--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16)
# under the distributed optimizer: DP2 prints the single process's losses within 1e-6 relative over 10
# iterations, as with fp32 moments, while bf16 moments move them by more than that (one process, ~7e-6);
# the shards do not matter: DP2 with --ddp-bucket-size 1000 (several buckets, other shard bounds) prints
# the default buckets' losses bit for bit (hex floats). A DP2 checkpoint with bf16 moments resumes in one
# process: iterations 6-10 within 1e-6 of the straight single-process run. ~13 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
common=(--train-iters 10 --global-batch-size 8 --micro-batch-size 2 --num-layers 2 --distributed-timeout-minutes 1
  --print-bits --use-distributed-optimizer)
bf16=(--use-precision-aware-optimizer --exp-avg-dtype bf16 --exp-avg-sq-dtype bf16)
fail=0
train_check "$GPTRAIN_TMP/one32.log" 1
train_check "$GPTRAIN_TMP/dp32.log" 2
train_check "$GPTRAIN_TMP/one.log" 1 "${bf16[@]}"
train_check "$GPTRAIN_TMP/dp.log" 2 "${bf16[@]}"
train_check "$GPTRAIN_TMP/dp_buckets.log" 2 "${bf16[@]}" --ddp-bucket-size 1000
e32=$(max_rel_err "$GPTRAIN_TMP/one32.log" "$GPTRAIN_TMP/dp32.log")
e16=$(max_rel_err "$GPTRAIN_TMP/one.log" "$GPTRAIN_TMP/dp.log")
d=$(max_rel_err "$GPTRAIN_TMP/one32.log" "$GPTRAIN_TMP/one.log")
echo "DP2 vs one process: fp32 moments $e32, bf16 moments $e16 (bf16 vs fp32 moments in one process: $d)"
awk -v a="$e32" -v b="$e16" -v d="$d" 'BEGIN { exit !(a <= 1e-6 && b <= 1e-6 && d > 1e-6) }' || { echo FAIL; fail=1; }
# The losses' bits (the gradient norm's fp64 sum is grouped by bucket, so its last bit may move).
loss_bits() { bits "$1" | cut -d' ' -f1,2; }
if [ "$(loss_bits "$GPTRAIN_TMP/dp.log")" != "$(loss_bits "$GPTRAIN_TMP/dp_buckets.log")" ] ||
  [ "$(loss_bits "$GPTRAIN_TMP/dp.log" | wc -l)" != 10 ]; then
  echo "FAIL: DP2 bf16 moments with other buckets (shards) differ"
  diff <(loss_bits "$GPTRAIN_TMP/dp.log") <(loss_bits "$GPTRAIN_TMP/dp_buckets.log") | head
  fail=1
else
  echo "DP2 bf16 moments: other shard bounds give the same bits"
fi
# Save at DP2 after iteration 5, resume in one process.
train_check "$GPTRAIN_TMP/first.log" 2 "${bf16[@]}" --save "$GPTRAIN_TMP/ck" --save-at 5 --train-iters 5
train_check "$GPTRAIN_TMP/resumed.log" 1 "${bf16[@]}" --load "$GPTRAIN_TMP/ck"
e=$(max_rel_err "$GPTRAIN_TMP/one.log" "$GPTRAIN_TMP/resumed.log" 6)
echo "DP2 bf16-moment checkpoint resumed in one process, iterations 6-10: max rel loss err $e"
awk -v e="$e" 'BEGIN { exit !(e <= 1e-6) }' || { echo FAIL; fail=1; }
exit $fail
