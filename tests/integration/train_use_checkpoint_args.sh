#!/usr/bin/env bash
# --use-checkpoint-args: a resume that gives no model flags takes them from the checkpoint's recorded flags (a
# Llama-style model: RoPE, RMSNorm, SwiGLU, GQA, untied, no biases) and trains on with the uninterrupted run's
# losses, printing Megatron's "Setting X to Y from checkpoint" lines. As Megatron: an explicit size wins over the
# checkpoint's (--hidden-size 64 then fails to load, naming the difference), an explicit model switch does not
# (--normalization LayerNorm is replaced by the checkpoint's RMSNorm, with a warning); without --load it is
# refused. ~4 s.
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
source "$GPTRAIN_SRC/tests/integration/log_lines.bash"
model=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --ffn-hidden-size 48 --seq-length 16
  --max-position-embeddings 16 --position-embedding-type rope --normalization RMSNorm --swiglu --disable-bias-linear
  --group-query-attention --num-query-groups 2 --untie-embeddings-and-output-weights)
run=(--micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --mock-data --vocab-size 97 --log-interval 1 --eval-iters 0
  --seed 7)
fail() { echo "FAIL: $*"; exit 1; }
"$bin/pretrain_gpt" "${model[@]}" "${run[@]}" --train-iters 4 > "$tmp/straight.log"
"$bin/pretrain_gpt" "${model[@]}" "${run[@]}" --train-iters 4 --exit-interval 2 --save "$tmp/ck" --save-interval 2 \
  > "$tmp/first.log"
"$bin/pretrain_gpt" "${run[@]}" --train-iters 4 --load "$tmp/ck" --use-checkpoint-args > "$tmp/resumed.log" 2>&1 ||
  { cat "$tmp/resumed.log"; fail "the resume without model flags failed"; }
for want in "Setting num_layers to 2 from checkpoint" "Setting normalization to RMSNorm from checkpoint" \
  "Setting num_query_groups to 2 from checkpoint" "Setting swiglu to True from checkpoint"; do
  grep -qxF "$want" "$tmp/resumed.log" || { cat "$tmp/resumed.log"; fail "no line '$want'"; }
done
numbers "$tmp/straight.log" | grep -E "iteration +[34]/" > "$tmp/straight.tail"
numbers "$tmp/resumed.log" | diff "$tmp/straight.tail" - || fail "the resumed losses differ from the straight run's"
echo "ok   resumed with the checkpoint's model flags: iterations 3-4 as the straight run"

# An explicit size wins (and cannot load); an explicit switch is replaced, with a warning.
if "$bin/pretrain_gpt" "${run[@]}" --train-iters 4 --load "$tmp/ck" --use-checkpoint-args --hidden-size 64 \
  > "$tmp/size.log" 2>&1; then
  fail "--hidden-size 64 loaded a hidden-size-32 checkpoint"
fi
grep -q "hidden_size" "$tmp/size.log" || { cat "$tmp/size.log"; fail "the load error does not name hidden_size"; }
"$bin/pretrain_gpt" "${run[@]}" --train-iters 4 --load "$tmp/ck" --use-checkpoint-args --normalization LayerNorm \
  > "$tmp/switch.log" 2>&1 || { cat "$tmp/switch.log"; fail "the resume with --normalization LayerNorm failed"; }
grep -qF "warning: --use-checkpoint-args: the checkpoint's model flags replace the command line's --normalization LayerNorm (the checkpoint's RMSNorm)" \
  "$tmp/switch.log" || { cat "$tmp/switch.log"; fail "no warning about the replaced --normalization"; }
numbers "$tmp/switch.log" | diff "$tmp/straight.tail" - || fail "the resume with a replaced switch differs"
echo "ok   explicit --hidden-size kept (load refused), explicit --normalization replaced with a warning"

if "$bin/pretrain_gpt" "${model[@]}" "${run[@]}" --train-iters 4 --use-checkpoint-args > "$tmp/noload.log" 2>&1; then
  fail "--use-checkpoint-args without --load was taken"
fi
grep -qF -- "--use-checkpoint-args requires --load" "$tmp/noload.log" || { cat "$tmp/noload.log"; fail "no message"; }
echo "ok   --use-checkpoint-args without --load: $(grep -oF -- '--use-checkpoint-args requires --load' "$tmp/noload.log")"
