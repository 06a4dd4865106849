#!/usr/bin/env bash
# --load of a checkpoint whose bias switches differ from the run's flags fails before training, naming
# the switch, in both directions and on both load paths (mpirun -np 2 at TP2, and one process): a
# GPT-J-style checkpoint saved with --disable-bias-attention lacks the attention biases a run without
# the flag needs; one saved without it holds attention biases a --disable-bias-attention run would
# otherwise drop silently. The same for --qk-layernorm (a TP2 checkpoint with the per-head Q/K norms refused
# by a run without the flag; with it, one process loads it). --qk-l2-norm (no weights, so no tensor shows it):
# a TP2 run gives one process's loss, and its checkpoint is refused by a run without the flag. ~20 s on 2 cores.
set -euo pipefail
source "$(dirname "$0")/common.bash"
export OMP_NUM_THREADS=1
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
bin=$GPTRAIN_BIN/pretrain_gpt
model=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
  --position-embedding-type rope --rotary-interleaved --parallel-residual shared_norm
  --untie-embeddings-and-output-weights --output-layer-bias --micro-batch-size 2 --global-batch-size 2
  --train-iters 1 --lr 1e-3 --mock-data --vocab-size 250 --log-interval 1 --eval-iters 0
  --distributed-timeout-minutes 1)
tp=(--tensor-model-parallel-size 2)

mpirun_n 2 "$bin" "${model[@]}" "${tp[@]}" --disable-bias-attention --save "$GPTRAIN_TMP/no_attn_bias" --save-interval 1 \
  > "$GPTRAIN_TMP/save1.log" 2>&1 || { tail -20 "$GPTRAIN_TMP/save1.log"; exit 1; }
"$bin" "${model[@]}" --save "$GPTRAIN_TMP/attn_bias" --save-interval 1 > "$GPTRAIN_TMP/save2.log" 2>&1 ||
  { tail -20 "$GPTRAIN_TMP/save2.log"; exit 1; }

expect_refusal() {  # name want log -- command...: the command must fail with `want` in its output
  local name=$1 want=$2 log=$GPTRAIN_TMP/$3
  shift 4
  if "$@" > "$log" 2>&1; then echo "FAIL: $name: the mismatched load was accepted"; exit 1; fi
  grep -q -- "$want" "$log" || { echo "FAIL: $name: no '$want' in:"; tail -5 "$log"; exit 1; }
  if grep -q "iteration " "$log"; then echo "FAIL: $name: trained before refusing"; exit 1; fi
  echo "ok: $name: $(grep -m1 -o "the checkpoint .*" "$log" | cut -c1-150)"
}
need="disable_bias_attention (checkpoint true, this run false)"
extra="disable_bias_attention (checkpoint false, this run true)"
expect_refusal "TP2 run without the flag, checkpoint with it" "$need" a.log -- \
  mpirun_n 2 "$bin" "${model[@]}" "${tp[@]}" --load "$GPTRAIN_TMP/no_attn_bias" --finetune
expect_refusal "TP2 run with the flag, checkpoint without it" "$extra" b.log -- \
  mpirun_n 2 "$bin" "${model[@]}" "${tp[@]}" --disable-bias-attention --load "$GPTRAIN_TMP/attn_bias" --finetune
expect_refusal "one process with the flag, checkpoint without it" "$extra" c.log -- \
  "$bin" "${model[@]}" --disable-bias-attention --load "$GPTRAIN_TMP/attn_bias" --finetune
qk=(--disable-bias-attention --normalization RMSNorm)
mpirun_n 2 "$bin" "${model[@]}" "${tp[@]}" "${qk[@]}" --qk-layernorm --save "$GPTRAIN_TMP/qk" --save-interval 1 \
  > "$GPTRAIN_TMP/save3.log" 2>&1 || { tail -20 "$GPTRAIN_TMP/save3.log"; exit 1; }
expect_refusal "TP2 run without --qk-layernorm, checkpoint with it" "qk_layernorm (checkpoint true, this run false)" \
  d.log -- mpirun_n 2 "$bin" "${model[@]}" "${tp[@]}" "${qk[@]}" --load "$GPTRAIN_TMP/qk" --finetune
"$bin" "${model[@]}" "${qk[@]}" --qk-layernorm --load "$GPTRAIN_TMP/qk" --finetune > "$GPTRAIN_TMP/ok_qk.log" 2>&1 ||
  { tail -5 "$GPTRAIN_TMP/ok_qk.log"; exit 1; }
mpirun_n 2 "$bin" "${model[@]}" "${tp[@]}" --qk-l2-norm --save "$GPTRAIN_TMP/l2" --save-interval 1 \
  > "$GPTRAIN_TMP/save4.log" 2>&1 || { tail -20 "$GPTRAIN_TMP/save4.log"; exit 1; }
"$bin" "${model[@]}" --qk-l2-norm > "$GPTRAIN_TMP/l2_one.log" 2>&1 || { tail -5 "$GPTRAIN_TMP/l2_one.log"; exit 1; }
"$bin" "${model[@]}" > "$GPTRAIN_TMP/plain_one.log" 2>&1 || { tail -5 "$GPTRAIN_TMP/plain_one.log"; exit 1; }
l2_tp=$(grep -o "lm loss: [^ |]*" "$GPTRAIN_TMP/save4.log") l2_one=$(grep -o "lm loss: [^ |]*" "$GPTRAIN_TMP/l2_one.log")
plain=$(grep -o "lm loss: [^ |]*" "$GPTRAIN_TMP/plain_one.log")
[[ -n $l2_one && $l2_tp == "$l2_one" && $l2_one != "$plain" ]] ||
  { echo "FAIL: --qk-l2-norm loss TP2 '$l2_tp', one process '$l2_one', without the flag '$plain'"; exit 1; }
echo "ok: --qk-l2-norm $l2_one at TP2 and in one process (without: $plain)"
expect_refusal "one process without --qk-l2-norm, checkpoint with it" "qk_l2_norm true; give --qk-l2-norm" e.log -- \
  "$bin" "${model[@]}" --load "$GPTRAIN_TMP/l2" --finetune
# and the matching flags load (the TP2 checkpoint into one process)
"$bin" "${model[@]}" --disable-bias-attention --load "$GPTRAIN_TMP/no_attn_bias" --finetune > "$GPTRAIN_TMP/ok.log" 2>&1 ||
  { tail -5 "$GPTRAIN_TMP/ok.log"; exit 1; }
echo "PASS"
