#!/usr/bin/env bash
# MoE training end to end (single process): a Mixtral-like model (4 experts top-2, one dense layer between
# MoE layers, a shared expert, capacity 1.25 with token dropping, load-balancing and z losses, dropout on,
# --moe-per-layer-logging) trains; 10 iterations straight == 5 + save (--exit-interval) + --load and 5 more,
# digit for digit (losses, z_loss, load_balancing_loss, grad norms, validation, the per-layer lines); the
# checkpoint holds the stacked expert tensors with their (E, out, in) shapes and the model's "moe" metadata;
# --recompute-modules moe gives the same lines; TensorBoard holds the MoE losses and per-layer scalars. ~10 s.
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
common=(--num-layers 3 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 4 --train-iters 10 --lr 1e-2 --min-lr 1e-3 --lr-warmup-iters 2
        --lr-decay-style cosine --mock-data --vocab-size 97 --log-interval 1 --eval-interval 5 --eval-iters 2
        --seed 7 --hidden-dropout 0.1 --attention-dropout 0.1 --normalization RMSNorm --swiglu
        --position-embedding-type rope --disable-bias-linear --ffn-hidden-size 48
        --num-experts 4 --moe-router-topk 2 --moe-layer-freq "[1,0,1]" --moe-ffn-hidden-size 24
        --moe-shared-expert-intermediate-size 16 --moe-expert-capacity-factor 1.25 --moe-aux-loss-coeff 0.01
        --moe-z-loss-coeff 0.001 --moe-per-layer-logging)
"$bin/pretrain_gpt" "${common[@]}" --tensorboard-dir "$tmp/tb" > "$tmp/straight.log"
"$bin/pretrain_gpt" "${common[@]}" --save "$tmp/ckpt" --save-interval 100 --exit-interval 5 > "$tmp/first.log"
"$bin/pretrain_gpt" "${common[@]}" --load "$tmp/ckpt" > "$tmp/second.log"
"$bin/pretrain_gpt" "${common[@]}" --recompute-granularity selective --recompute-modules moe core_attn \
  > "$tmp/recompute.log"

lines() {  # iteration, validation and per-layer MoE lines without the wall-clock parts
  grep -E "iteration +[0-9]+/|validation loss at|MoE layers at iteration" "$1" |
    sed -E 's/^ \[[^]]*\]//; s/elapsed time per iteration \(ms\): [0-9.]+ \|//; s/ tokens per second: [0-9.]+ \|//'
}
lines "$tmp/straight.log" | grep -E "iteration +([6-9]|10)/|at iteration ([6-9]|10)\b" > "$tmp/straight.tail"
lines "$tmp/second.log" > "$tmp/second.all"
diff "$tmp/straight.tail" "$tmp/second.all" || { echo "FAIL: the resumed MoE run differs (above)"; exit 1; }
[ "$(grep -c 'MoE layers at iteration' "$tmp/second.all")" -eq 5 ] || { echo "FAIL: expected 5 per-layer lines"; exit 1; }
grep -q "z_loss: .* load_balancing_loss: " "$tmp/straight.tail" || { echo "FAIL: no MoE losses in the log line"; exit 1; }
lines "$tmp/straight.log" | diff - <(lines "$tmp/recompute.log") || { echo "FAIL: --recompute-modules moe differs"; exit 1; }

# TensorBoard: Megatron's tags, the MoE losses of every iteration and, with --moe-per-layer-logging, per layer.
if [ -n "${GPTRAIN_PYTHON:-}" ] && "$GPTRAIN_PYTHON" -c "import tensorboard" 2>/dev/null; then
  "$GPTRAIN_PYTHON" - "$tmp/tb" "$tmp/straight.log" <<'PY'
import re, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
tags = set(acc.Tags()["scalars"])
for t in ["z_loss", "load_balancing_loss", "moe/load_balancing_loss_layer_0", "moe/z_loss_layer_2",
          "moe/load_balancing_loss_layer_1"]:
    assert t in tags, (t, sorted(tags))
log = {int(m.group(1)): float(m.group(2)) for m in
       re.finditer(r"iteration +(\d+)/ +\d+ \|.*?load_balancing_loss: ([0-9.E+-]+)", open(sys.argv[2]).read())}
tb = {e.step: e.value for e in acc.Scalars("load_balancing_loss")}
assert sorted(tb) == list(range(1, 11)), sorted(tb)
for it, v in log.items():  # --log-interval 1: the line's interval is the iteration
    assert abs(tb[it] - v) <= 1e-6 * abs(v), (it, tb[it], v)
assert all(e.value == 0.0 for e in acc.Scalars("moe/load_balancing_loss_layer_1")), "layer 1 is dense"
print("TensorBoard: MoE losses and per-layer scalars as Megatron writes them")
PY
fi

# The checkpoint: stacked experts (E, out, in) of the MoE layers 0 and 2, a dense MLP in layer 1, metadata.
if [ -n "${GPTRAIN_PYTHON:-}" ] && "$GPTRAIN_PYTHON" -c "import safetensors" 2>/dev/null; then
  "$GPTRAIN_PYTHON" - "$tmp/ckpt/iter_0000005" <<'PY'
import json, sys
from safetensors import safe_open
d = sys.argv[1]
with safe_open(d + "/model_tp00_pp000.safetensors", framework="np") as f:
    shapes = {k: f.get_slice(k).get_shape() for k in f.keys()}
for l in (0, 2):
    p = f"decoder.layers.{l}.mlp."
    assert shapes[p + "router.weight"] == [4, 32], shapes[p + "router.weight"]
    assert shapes[p + "experts.linear_fc1.weight"] == [4, 48, 32]
    assert shapes[p + "experts.linear_fc2.weight"] == [4, 32, 24]
    assert shapes[p + "shared_experts.linear_fc1.weight"] == [32, 32]
    assert shapes[p + "shared_experts.linear_fc2.weight"] == [32, 16]
assert shapes["decoder.layers.1.mlp.linear_fc1.weight"] == [96, 32]
moe = json.load(open(d + "/metadata.json"))["model"]["moe"]
assert moe["num_experts"] == 4 and moe["layer_pattern"] == [1, 0, 1] and moe["expert_layout"] == "stacked", moe
print("checkpoint: stacked expert tensors and moe metadata as documented")
PY
fi
echo "MoE resume is bitwise: $(wc -l < "$tmp/straight.tail") lines identical; recompute moe identical"
