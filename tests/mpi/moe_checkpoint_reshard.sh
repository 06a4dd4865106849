#!/usr/bin/env bash
# Expert-parallel checkpoints reshard: a tiny Mixtral-style model (4 experts top-2) saved at iteration 5
# under EP 2 with the distributed optimizer (EP rank 1's experts in model_tp00_pp000_ep001) resumes in
# one process (EP 1), at EP 2 x EDP 2 (expert moments sharded over EDP), at EP 4, and at the same layout;
# a save from one process resumes at EP 2. Resumed iterations 6-8 match the uninterrupted run within 1e-6
# relative (another layout sums in another order), and bitwise (loss and gradient norm bits) at the same
# layout. At another EP size with the same DP (EP 2 -> EP 1 with the distributed optimizer; EP 1 -> EP 2
# with a padded capacity and the allgather dispatcher) the first resumed loss is bitwise the uninterrupted
# run's; the later ones are not, as the expert weight gradients sum their rows in another grouping
# (docs/expert-parallelism.md section 4). Resharding itself loses nothing: each checkpoint loaded in another
# layout (EP 1, EP 1 with the distributed optimizer, EP 2 x EDP 2, EP 4; EP 2 and EP 2 x TP 2 from one
# process) and saved again holds the same model and AdamW state bit for bit
# (tests/python/checkpoint_same_state.py). Expert tensor parallelism: a TP 2 x EP 2 save (ETP 2, expert
# tensors cut along the experts and the ffn width) resumes in one process and at TP 2 with ETP 1, a TP 2 ETP 1
# save at ETP 2 (within 1e-6: the fc2 sums split differently), and both resave bitwise; likewise a save at TP 2
# with ETP 1 and EP 2 = TP (the experts whole, split over the TP ranks). ~1 min on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
common=(--arch llama --num-experts 4 --moe-router-topk 2 --moe-aux-loss-coeff 0.01 --train-iters 8
  --global-batch-size 8 --micro-batch-size 2 --distributed-timeout-minutes 1 --print-bits)
bits() { awk '$1 == "iter" && $2 > 5 && $7 == "bits" { print $2, $8, $9 }' "$1"; }
fail=0
check() {  # check NAME REF OUT: iterations 6-8 of OUT against REF (and the load line)
  grep -q "loaded iteration 5" "$3" || { cat "$3"; echo "$1: did not load iteration 5"; exit 1; }
  if grep -q "^iter [1-5] " "$3"; then echo "$1: resumed run repeated iterations"; exit 1; fi
  local err ok
  err=$(max_rel_err "$2" "$3" 6)
  ok=$(awk -v e="$err" 'BEGIN { print (e <= 1e-6) ? "ok" : "FAIL" }')
  printf '%-62s iters 6-8 max rel loss err %s %s\n' "$1" "$err" "$ok"
  [ "$ok" = ok ] || fail=1
}
resume() {  # resume NAME NP CK REF FLAGS...
  local name=$1 n=$2 ck=$3 ref=$4
  shift 4
  mpirun_n "$n" "$bin" "${common[@]}" --load "$ck" "$@" > "$GPTRAIN_TMP/resume.txt" 2>&1 ||
    { cat "$GPTRAIN_TMP/resume.txt"; exit 1; }
  check "$name" "$ref" "$GPTRAIN_TMP/resume.txt"
}

# resave NAME NP CK FLAGS...: load CK in the layout of FLAGS and save it again at once; the two checkpoints
# must hold the same model and optimizer state bit for bit (reassembled independently in Python).
resave() {
  local name=$1 n=$2 ck=$3 re=$GPTRAIN_TMP/resaved
  shift 3
  rm -rf "$re"
  mpirun_n "$n" "$bin" "${common[@]}" --load "$ck" --save "$re" --save-at 5 --train-iters 5 "$@" \
    > "$GPTRAIN_TMP/resave.txt" 2>&1 || { cat "$GPTRAIN_TMP/resave.txt"; exit 1; }
  if out=$("$py" "$GPTRAIN_SRC/tests/python/checkpoint_same_state.py" "$ck" "$re" 2>&1); then
    printf '%-62s state resaved bitwise\n' "$name"
  else
    echo "$out"
    printf '%-62s state differs after resaving FAIL\n' "$name"
    fail=1
  fi
}
py=${GPTRAIN_PYTHON:-python3}

ck=$GPTRAIN_TMP/ck_ep2
ep2=(--expert-model-parallel-size 2 --use-distributed-optimizer --moe-token-dispatcher-type alltoall)
mpirun_n 2 "$bin" "${common[@]}" "${ep2[@]}" --save "$ck" --save-at 5 > "$GPTRAIN_TMP/full_ep2.txt" 2>&1 ||
  { cat "$GPTRAIN_TMP/full_ep2.txt"; exit 1; }
ls "$ck/iter_0000005/model_tp00_pp000_ep001.safetensors" "$ck/iter_0000005/optim_tp00_pp000_dp000_ep001.safetensors" \
  > /dev/null
grep -q '"ep": 2' "$ck/iter_0000005/metadata.json"
resume "EP2 + distributed optimizer -> np=1 (EP 1)" 1 "$ck" "$GPTRAIN_TMP/full_ep2.txt"
resume "EP2 + distributed optimizer -> np=4 EP2 x EDP2 + dist. opt." 4 "$ck" "$GPTRAIN_TMP/full_ep2.txt" \
  "${ep2[@]}"
resume "EP2 + distributed optimizer -> np=4 EP4" 4 "$ck" "$GPTRAIN_TMP/full_ep2.txt" --expert-model-parallel-size 4
resave "EP2 + distributed optimizer -> np=1 (EP 1)" 1 "$ck"
resave "EP2 + distributed optimizer -> np=2 EP 1 + dist. opt." 2 "$ck" --use-distributed-optimizer
resave "EP2 + distributed optimizer -> np=4 EP2 x EDP2 + dist. opt." 4 "$ck" "${ep2[@]}"
resave "EP2 + distributed optimizer -> np=4 EP4" 4 "$ck" --expert-model-parallel-size 4
resume "EP2 + distributed optimizer -> the same layout" 2 "$ck" "$GPTRAIN_TMP/full_ep2.txt" "${ep2[@]}"
if [ "$(bits "$GPTRAIN_TMP/full_ep2.txt")" = "$(bits "$GPTRAIN_TMP/resume.txt")" ]; then
  echo "EP2 -> the same layout: iterations 6-8 bitwise (loss and gradient norm)"
else
  echo "EP2 -> the same layout: not bitwise"; fail=1
fi

# same_next_loss NAME REF OUT: the first resumed iteration's loss has the same bits in both runs.
same_next_loss() {
  local want got
  want=$(bits "$2" | awk '$1 == 6 { print $2 }')
  got=$(bits "$3" | awk '$1 == 6 { print $2 }')
  if [ -n "$want" ] && [ "$want" = "$got" ]; then
    printf '%-62s iteration 6 loss bitwise (%s)\n' "$1" "$got"
  else
    printf '%-62s iteration 6 loss %s, uninterrupted %s FAIL\n' "$1" "${got:-none}" "${want:-none}"
    fail=1
  fi
}
# At another EP size with the same DP the next loss is bitwise: each expert GEMM runs per source rank
# (docs/expert-parallelism.md section 4). Both directions, both dispatchers, dropless and padded capacity.
resume "EP2 + distributed optimizer -> np=2 EP 1 + dist. opt." 2 "$ck" "$GPTRAIN_TMP/full_ep2.txt" \
  --use-distributed-optimizer
same_next_loss "EP2 + distributed optimizer -> np=2 EP 1 + dist. opt." "$GPTRAIN_TMP/full_ep2.txt" \
  "$GPTRAIN_TMP/resume.txt"
ck=$GPTRAIN_TMP/ck_dp2
cap=(--moe-expert-capacity-factor 1.0 --moe-pad-expert-input-to-capacity)
mpirun_n 2 "$bin" "${common[@]}" "${cap[@]}" --save "$ck" --save-at 5 > "$GPTRAIN_TMP/full_dp2.txt" 2>&1 ||
  { cat "$GPTRAIN_TMP/full_dp2.txt"; exit 1; }
resume "np=2 EP 1, capacity 1.0 padded -> np=2 EP2 (allgather)" 2 "$ck" "$GPTRAIN_TMP/full_dp2.txt" "${cap[@]}" \
  --expert-model-parallel-size 2
same_next_loss "np=2 EP 1, capacity 1.0 padded -> np=2 EP2 (allgather)" "$GPTRAIN_TMP/full_dp2.txt" \
  "$GPTRAIN_TMP/resume.txt"

ck=$GPTRAIN_TMP/ck_ep1
"$bin" "${common[@]}" --save "$ck" --save-at 5 > "$GPTRAIN_TMP/full_ep1.txt" 2>&1 || { cat "$GPTRAIN_TMP/full_ep1.txt"; exit 1; }
resume "np=1 (EP 1) -> np=2 EP2 (allgather)" 2 "$ck" "$GPTRAIN_TMP/full_ep1.txt" --expert-model-parallel-size 2
resave "np=1 (EP 1) -> np=2 EP2 (allgather)" 2 "$ck" --expert-model-parallel-size 2
resave "np=1 (EP 1) -> np=4 EP2 x TP2 (ETP 2)" 4 "$ck" --expert-model-parallel-size 2 --tensor-model-parallel-size 2

# Expert tensor parallelism: a save at TP 2 x EP 2 (ETP 2: every expert tensor cut along the experts and the
# ffn width) resumes with the experts whole (one process; TP 2 with ETP 1) and resaves bitwise; a save at
# TP 2 with ETP 1 resumes at ETP 2.
ck=$GPTRAIN_TMP/ck_etp2
etp2=(--tensor-model-parallel-size 2 --expert-model-parallel-size 2 --use-distributed-optimizer)
mpirun_n 4 "$bin" "${common[@]}" "${etp2[@]}" --save "$ck" --save-at 5 > "$GPTRAIN_TMP/full_etp2.txt" 2>&1 ||
  { cat "$GPTRAIN_TMP/full_etp2.txt"; exit 1; }
grep -aq '"blocks\\*": *\[\[0,2,2\],\[1,' "$ck/iter_0000005/model_tp01_pp000_ep001.safetensors" ||
  { echo "ETP 2 x EP 2: model_tp01_pp000_ep001 holds no expert slice along dims 0 and 1 FAIL"; fail=1; }
resume "TP2 x EP2 (ETP 2) + dist. opt. -> np=1" 1 "$ck" "$GPTRAIN_TMP/full_etp2.txt"
resume "TP2 x EP2 (ETP 2) + dist. opt. -> np=2 TP2, ETP 1" 2 "$ck" "$GPTRAIN_TMP/full_etp2.txt" \
  --tensor-model-parallel-size 2 --expert-tensor-parallel-size 1
resave "TP2 x EP2 (ETP 2) + dist. opt. -> np=1" 1 "$ck"
resave "TP2 x EP2 (ETP 2) + dist. opt. -> np=2 TP2, ETP 1" 2 "$ck" --tensor-model-parallel-size 2 \
  --expert-tensor-parallel-size 1
ck=$GPTRAIN_TMP/ck_etp1
mpirun_n 2 "$bin" "${common[@]}" --tensor-model-parallel-size 2 --expert-tensor-parallel-size 1 --save "$ck" \
  --save-at 5 > "$GPTRAIN_TMP/full_etp1.txt" 2>&1 || { cat "$GPTRAIN_TMP/full_etp1.txt"; exit 1; }
resume "np=2 TP2, ETP 1 -> np=2 TP2 (ETP 2)" 2 "$ck" "$GPTRAIN_TMP/full_etp1.txt" --tensor-model-parallel-size 2
resave "np=2 TP2, ETP 1 -> np=4 TP2 x EP2 (ETP 2)" 4 "$ck" --tensor-model-parallel-size 2 \
  --expert-model-parallel-size 2
# ETP 1 with EP 2 = TP (each TP rank holds half of the experts whole, in its own model_tp?? file) and back.
ck=$GPTRAIN_TMP/ck_eptp
eptp=(--tensor-model-parallel-size 2 --expert-tensor-parallel-size 1 --expert-model-parallel-size 2)
mpirun_n 2 "$bin" "${common[@]}" "${eptp[@]}" --save "$ck" --save-at 5 > "$GPTRAIN_TMP/full_eptp.txt" 2>&1 ||
  { cat "$GPTRAIN_TMP/full_eptp.txt"; exit 1; }
resume "TP2, ETP 1, EP2 = TP -> np=1" 1 "$ck" "$GPTRAIN_TMP/full_eptp.txt"
resume "TP2, ETP 1, EP2 = TP -> np=2 TP2 (ETP 2)" 2 "$ck" "$GPTRAIN_TMP/full_eptp.txt" --tensor-model-parallel-size 2
resave "TP2, ETP 1, EP2 = TP -> np=1" 1 "$ck"
resave "TP2 x EP2 (ETP 2) + dist. opt. -> np=2 TP2, ETP 1, EP2 = TP" 2 "$GPTRAIN_TMP/ck_etp2" "${eptp[@]}"
exit $fail
