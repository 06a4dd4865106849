#!/usr/bin/env bash
# --check-weight-hash-across-dp-replicas-interval: under DP2 (mpirun -np 2) the replicas' parameter hashes match
# at the start and every 2 iterations (Megatron's ">>> Weight hashes match after N iterations..." lines); with
# one rank's weight corrupted by the test hook GPTRAIN_TEST_CORRUPT_WEIGHT after iteration 2, every rank stops
# there with the same error naming both ranks and the tensor (none is cut short by an abort), non-zero exit. Under TP2 x DP2 the corrupted rank 3
# is named against its DP peer, rank 1. ~10 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
M=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --micro-batch-size 2 --global-batch-size 4 --train-iters 4 --lr 1e-2 --seed 7 --mock-data --vocab-size 250
  --eval-iters 0 --log-interval 1 --distributed-timeout-minutes 1 --check-weight-hash-across-dp-replicas-interval 2)
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

mpirun_n 2 "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" > ok.log 2>&1 || { cat ok.log; bad "the matching run failed"; }
matched=$(grep -cE '^>>> Weight hashes match after (0|2|4) iterations\.\.\.$' ok.log || true)
[ "$matched" = 3 ] && echo "ok   DP2: hashes match after 0, 2, 4 iterations" || { cat ok.log; bad "want 3 match lines, got $matched"; }

# check NP LAYOUT CORRUPT WANT: the corrupted run stops at iteration 2 on every rank with the message WANT.
check() {
  local n=$1 corrupt=$3 want=$4
  read -ra L <<<"$2"
  if GPTRAIN_TEST_CORRUPT_WEIGHT=$corrupt mpirun_n "$n" "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" "${L[@]}" > bad.log 2>&1; then
    bad "np=$n $2: corrupted weights, yet rc 0"
  fi
  local ranks others
  ranks=$(grep -cE "fatal: .*parameter hashes not matching across DP replicas after 2 iterations: $want" bad.log || true)
  others=$(grep "fatal: " bad.log | grep -vcE "parameter hashes not matching across DP replicas after 2 iterations: $want" || true)
  if [ "$ranks" = "$n" ] && [ "$others" = 0 ] && ! grep -q 'iteration        3/' bad.log; then
    echo "ok   np=$n ${2:-DP2}: $(grep -m1 -oE 'parameter hashes not matching.*' bad.log)"
  else
    cat bad.log
    bad "np=$n $2: want the ranks stopping after iteration 2 with '$want', got $ranks such lines and $others others"
  fi
}
check 2 "" 1:2 "rank 0: its parameters \(DP rank 0\) differ from global rank 1's \(DP rank 1\) in [a-z_.0-9]+ \(model chunk 0\)"
check 4 "--tensor-model-parallel-size 2" 3:2 "rank 1: its parameters \(DP rank 0\) differ from global rank 3's \(DP rank 1\) in"
[ $fails -eq 0 ] && echo "PASS" || { echo "$fails failure(s)"; exit 1; }
