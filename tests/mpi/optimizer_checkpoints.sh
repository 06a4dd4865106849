#!/usr/bin/env bash
# --optimizer sgd and --optimizer muon checkpoints resume and reshard (mpi_train_check, Llama layout): SGD's
# momentum buffers saved at iteration 5 from DP 2 with the distributed optimizer (each rank a shard) resume
# bitwise (loss and gradient-norm bits of iterations 6-8) at the same layout and within 1e-6 relative in one
# process and at TP 2; Muon's momentum buffers (and AdamW's moments of the embeddings, output layer and norms)
# saved from TP 2 (each rank's shard of every matrix) resume bitwise at TP 2 and within 1e-6 in one process
# and at DP 2. Each checkpoint loaded in another layout and saved again holds the same state bit for bit
# (tests/python/checkpoint_same_state.py). Lion's state (exp_avg of the matrices) saved from DP 2 with the
# distributed optimizer resumes bitwise there and within 1e-6 in one process; so does Muon's with the (layer-
# wise) distributed optimizer, whose losses are those of one process. A checkpoint of one optimizer loaded by
# another is refused, naming both; --optimizer dist_muon runs as muon with --use-distributed-optimizer.
# ~37 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/mpi_train_check
py=${GPTRAIN_PYTHON:-python3}
base=(--arch llama --train-iters 8 --global-batch-size 8 --micro-batch-size 2 --distributed-timeout-minutes 1
  --print-bits)
bits() { awk '$1 == "iter" && $2 > 5 && $7 == "bits" { print $2, $8, $9 }' "$1"; }
fail=0
check() {  # check NAME REF OUT [bitwise]
  grep -q "loaded iteration 5" "$3" || { cat "$3"; echo "$1: did not load iteration 5"; exit 1; }
  if grep -q "^iter [1-5] " "$3"; then echo "$1: resumed run repeated iterations"; exit 1; fi
  local err ok
  err=$(max_rel_err "$2" "$3" 6)
  ok=$(awk -v e="$err" 'BEGIN { print (e <= 1e-6) ? "ok" : "FAIL" }')
  if [ "${4:-}" = bitwise ] && [ "$(bits "$2")" != "$(bits "$3")" ]; then ok="FAIL (not bitwise)"; fi
  printf '%-52s iters 6-8 max rel loss err %s %s\n' "$1" "$err" "$ok"
  [ "$ok" = ok ] || fail=1
}
run() {  # run OUT NP FLAGS...
  local out=$1 n=$2
  shift 2
  mpirun_n "$n" "$bin" "${base[@]}" "$@" > "$out" 2>&1 || { cat "$out"; exit 1; }
}
resave() {  # resave NAME NP CK FLAGS...: load CK in another layout, save at once, compare the states
  local name=$1 n=$2 ck=$3 re=$GPTRAIN_TMP/resaved
  shift 3
  rm -rf "$re"
  run "$GPTRAIN_TMP/resave.txt" "$n" --load "$ck" --save "$re" --save-at 5 --train-iters 5 "$@"
  if out=$("$py" "$GPTRAIN_SRC/tests/python/checkpoint_same_state.py" "$ck" "$re" 2>&1); then
    printf '%-52s state resaved bitwise\n' "$name"
  else
    echo "$out"
    printf '%-52s state differs after resaving FAIL\n' "$name"
    fail=1
  fi
}

# SGD: saved sharded over DP 2.
ck=$GPTRAIN_TMP/ck_sgd
run "$GPTRAIN_TMP/full_sgd.txt" 2 --optimizer sgd --use-distributed-optimizer --save "$ck" --save-at 5
ls "$ck/iter_0000005/optim_tp00_pp000_dp000.safetensors" > /dev/null
run "$GPTRAIN_TMP/r.txt" 2 --optimizer sgd --use-distributed-optimizer --load "$ck"
check "sgd DP2 distributed optimizer -> same" "$GPTRAIN_TMP/full_sgd.txt" "$GPTRAIN_TMP/r.txt" bitwise
run "$GPTRAIN_TMP/r.txt" 1 --optimizer sgd --load "$ck"
check "sgd DP2 distributed optimizer -> one process" "$GPTRAIN_TMP/full_sgd.txt" "$GPTRAIN_TMP/r.txt"
run "$GPTRAIN_TMP/r.txt" 2 --optimizer sgd --tensor-model-parallel-size 2 --load "$ck"
check "sgd DP2 distributed optimizer -> TP2" "$GPTRAIN_TMP/full_sgd.txt" "$GPTRAIN_TMP/r.txt"
resave "sgd DP2 distributed optimizer -> TP2, resaved" 2 "$ck" --optimizer sgd --tensor-model-parallel-size 2

# Muon: saved from TP 2.
ck=$GPTRAIN_TMP/ck_muon
run "$GPTRAIN_TMP/full_muon.txt" 2 --optimizer muon --tensor-model-parallel-size 2 --save "$ck" --save-at 5
run "$GPTRAIN_TMP/r.txt" 2 --optimizer muon --tensor-model-parallel-size 2 --load "$ck"
check "muon TP2 -> same" "$GPTRAIN_TMP/full_muon.txt" "$GPTRAIN_TMP/r.txt" bitwise
run "$GPTRAIN_TMP/r.txt" 1 --optimizer muon --load "$ck"
check "muon TP2 -> one process" "$GPTRAIN_TMP/full_muon.txt" "$GPTRAIN_TMP/r.txt"
run "$GPTRAIN_TMP/r.txt" 2 --optimizer muon --load "$ck"
check "muon TP2 -> DP2" "$GPTRAIN_TMP/full_muon.txt" "$GPTRAIN_TMP/r.txt"
resave "muon TP2 -> one process, resaved" 1 "$ck" --optimizer muon

# Muon with the distributed optimizer (layer-wise: each DP rank steps whole tensors): the losses of one
# process; saved from DP 2 (the state gathered from the tensors' owners), resumed bitwise there and within 1e-6
# in one process.
ck=$GPTRAIN_TMP/ck_muon_lw
run "$GPTRAIN_TMP/full_muon_lw.txt" 2 --optimizer muon --use-distributed-optimizer --save "$ck" --save-at 5
run "$GPTRAIN_TMP/one_muon.txt" 1 --optimizer muon
err=$(max_rel_err "$GPTRAIN_TMP/one_muon.txt" "$GPTRAIN_TMP/full_muon_lw.txt" 1)
ok=$(awk -v e="$err" 'BEGIN { print (e <= 1e-6) ? "ok" : "FAIL" }')
grep -q "optimizer state layer-wise over DP" "$GPTRAIN_TMP/full_muon_lw.txt" || ok="FAIL (not layer-wise)"
printf '%-52s iters 1-8 max rel loss err %s %s\n' "muon DP2 layer-wise vs one process" "$err" "$ok"
[ "$ok" = ok ] || fail=1
run "$GPTRAIN_TMP/r.txt" 2 --optimizer muon --use-distributed-optimizer --load "$ck"
check "muon DP2 layer-wise -> same" "$GPTRAIN_TMP/full_muon_lw.txt" "$GPTRAIN_TMP/r.txt" bitwise
run "$GPTRAIN_TMP/r.txt" 1 --optimizer muon --load "$ck"
check "muon DP2 layer-wise -> one process" "$GPTRAIN_TMP/full_muon_lw.txt" "$GPTRAIN_TMP/r.txt"
resave "muon DP2 layer-wise -> one process, resaved" 1 "$ck" --optimizer muon

# Megatron's deprecated --optimizer dist_muon runs Muon with its layer-wise distributed optimizer (DP 2).
mpirun_n 2 "$GPTRAIN_BIN/pretrain_gpt" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 \
  --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 4 --train-iters 2 --lr 1e-3 --mock-data \
  --vocab-size 97 --optimizer dist_muon > "$GPTRAIN_TMP/dist_muon.txt" 2>&1 || { cat "$GPTRAIN_TMP/dist_muon.txt"; exit 1; }
if grep -q "dist_muon is deprecated" "$GPTRAIN_TMP/dist_muon.txt" &&
   grep -q "Muon over 9 matrices (25088 parameters), AdamW over the other 4992 .*optimizer state layer-wise over DP" \
     "$GPTRAIN_TMP/dist_muon.txt"; then
  printf '%-52s ok\n' "--optimizer dist_muon: muon, layer-wise"
else
  tail -5 "$GPTRAIN_TMP/dist_muon.txt"; echo "--optimizer dist_muon: FAIL"; fail=1
fi

# Lion (exp_avg of the matrices, AdamW's moments of the rest): saved sharded over DP 2.
ck=$GPTRAIN_TMP/ck_lion
run "$GPTRAIN_TMP/full_lion.txt" 2 --optimizer lion --use-distributed-optimizer --save "$ck" --save-at 5
run "$GPTRAIN_TMP/r.txt" 2 --optimizer lion --use-distributed-optimizer --load "$ck"
check "lion DP2 distributed optimizer -> same" "$GPTRAIN_TMP/full_lion.txt" "$GPTRAIN_TMP/r.txt" bitwise
run "$GPTRAIN_TMP/r.txt" 1 --optimizer lion --load "$ck"
check "lion DP2 distributed optimizer -> one process" "$GPTRAIN_TMP/full_lion.txt" "$GPTRAIN_TMP/r.txt"
resave "lion DP2 distributed optimizer -> TP2, resaved" 2 "$ck" --optimizer lion --tensor-model-parallel-size 2

# Another optimizer's state is refused by name (Lion's and Adam's both hold exp_avg).
for pair in "sgd:adam" "muon:sgd" "lion:adam" "sgd:lion"; do
  saved=${pair%%:*} now=${pair#*:}
  if "$bin" "${base[@]}" --optimizer "$now" --load "$GPTRAIN_TMP/ck_$saved" > "$GPTRAIN_TMP/m.txt" 2>&1; then
    echo "a $saved checkpoint loaded with --optimizer $now"
    fail=1
  elif ! grep -q "but this run's --optimizer $now keeps" "$GPTRAIN_TMP/m.txt"; then
    cat "$GPTRAIN_TMP/m.txt"
    echo "$saved checkpoint with --optimizer $now: not the expected message"
    fail=1
  else
    printf '%-52s refused: %s\n' "$saved checkpoint, --optimizer $now" "$(grep -o "holds.*keeps [a-z_]*" "$GPTRAIN_TMP/m.txt" | head -1)"
  fi
done
exit $fail
