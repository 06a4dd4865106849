#!/usr/bin/env bash
# --moe-use-upcycling (single process): a dense model (RMSNorm, SwiGLU, RoPE) trains 3 iterations and saves;
# an MoE run (4 experts top-2, softmax over the top-k so the probabilities sum to 1) upcycles it: its first
# loss is the dense model's on the same batch (the data starts afresh, as with --finetune) to fp32 rounding,
# and it trains on (iteration counted from 0). Its checkpoint is an ordinary MoE one: 4 + a resume from its
# iteration-2 save (without the flag) == 4 straight, bitwise. --dry-run checks the dense checkpoint; with
# --moe-router-pre-softmax the experts are the dense MLP scaled as Megatron's. Refused:
# a --save that already holds a checkpoint, an MoE --load (also by --dry-run), granularity 2, no --save, no
# --num-experts, an empty --load, a dense checkpoint with linear biases (MoE runs have none). ~8 s.
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
fail() {
  echo "FAIL: $*"
  exit 1
}
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16
        --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --min-lr 1e-3 --lr-warmup-iters 1
        --lr-decay-style cosine --mock-data --vocab-size 97 --log-interval 1 --eval-interval 1000 --eval-iters 1
        --seed 7 --hidden-dropout 0 --attention-dropout 0 --normalization RMSNorm --swiglu
        --position-embedding-type rope --disable-bias-linear --ffn-hidden-size 48)
moe=(--num-experts 4 --moe-router-topk 2)
losses() { python3 -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("event") == "train": print(r["iteration"], repr(r["losses"]["lm loss"]))' "$1"; }
run() {  # run NAME FLAGS...: must succeed; its losses in $tmp/NAME.losses
  local name=$1
  shift
  "$bin/pretrain_gpt" --metrics-file "$tmp/$name.jsonl" "$@" > "$tmp/$name.log" 2>&1 ||
    { cat "$tmp/$name.log"; fail "run $name"; }
  losses "$tmp/$name.jsonl" > "$tmp/$name.losses"
}
refused() {  # refused MESSAGE FLAGS...
  local msg=$1
  shift
  if "$bin/pretrain_gpt" "$@" --save-interval 2 > "$tmp/refused.log" 2>&1; then fail "accepted: $*"; fi
  grep -qF -- "$msg" "$tmp/refused.log" || { cat "$tmp/refused.log"; fail "no \"$msg\""; }
}

run dense "${common[@]}" --train-iters 4 --save "$tmp/dense" --save-interval 100 --exit-interval 3
run dense4 "${common[@]}" --train-iters 4 --load "$tmp/dense" --finetune  # iteration 1: the dense loss
run up "${common[@]}" "${moe[@]}" --train-iters 4 --load "$tmp/dense" --save "$tmp/up" --save-interval 2 \
  --moe-use-upcycling
grep -q "enabling --no-load-optim for upcycling" "$tmp/up.log" || fail "no warning about --no-load-optim"
python3 - "$tmp/dense4.losses" "$tmp/up.losses" <<'PY'
import sys
dense = dict(l.split() for l in open(sys.argv[1]))
up = dict(l.split() for l in open(sys.argv[2]))
d, u = float(dense["1"]), float(up["1"])
assert abs(d - u) <= 1e-6 * abs(d), f"upcycled first loss {u!r} != dense loss {d!r} on the same batch"
assert sorted(map(int, up)) == [1, 2, 3, 4], sorted(up)
assert float(up["4"]) != u, "the upcycled model does not train"
print(f"upcycled first loss {u!r} == dense loss {d!r}")
PY
python3 - "$tmp/up/iter_0000004" <<'PY'
import json, sys
moe = json.load(open(sys.argv[1] + "/metadata.json"))["model"]["moe"]
assert moe["num_experts"] == 4 and moe["expert_layout"] == "stacked", moe
PY
# --moe-router-pre-softmax (top-k probabilities summing to about K/E): as Megatron, the experts' weights are the
# dense ones times (E/K)^(1/3) (SwiGLU: three matrices share the factor). lr 0 saves them untrained.
run pre "${common[@]}" "${moe[@]}" --lr-decay-style constant --train-iters 1 --lr 0 \
  --min-lr 0 --lr-warmup-iters 0 --load "$tmp/dense" --save "$tmp/pre" --save-interval 1 --moe-use-upcycling \
  --moe-router-pre-softmax
python3 - "$tmp/dense/iter_0000003" "$tmp/pre/iter_0000001" <<'PY'
import json, struct, sys
def tensors(d):
    b = open(d + "/model_tp00_pp000.safetensors", "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n])
    return {k: struct.unpack(f"<{(v['data_offsets'][1] - v['data_offsets'][0]) // 4}f",
                             b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in head.items() if k != "__metadata__" and v["dtype"] == "F32"}
dense, moe = tensors(sys.argv[1]), tensors(sys.argv[2])
s = 2.0 ** (1.0 / 3.0)
for l in (0, 1):
    for w in ("linear_fc1.weight", "linear_fc2.weight"):
        d, m = dense[f"decoder.layers.{l}.mlp.{w}"], moe[f"decoder.layers.{l}.mlp.experts.{w}"]
        assert len(m) == 4 * len(d), (w, len(m), len(d))
        err = max(abs(m[e * len(d) + i] - s * d[i]) for e in range(4) for i in range(len(d)))
        assert err <= 1e-6 * max(map(abs, d)), (l, w, err)
print("pre-softmax: experts = dense x (E/K)^(1/3)")
PY

# --dry-run checks the dense checkpoint against the dense form of the MoE model.
"$bin/pretrain_gpt" "${common[@]}" "${moe[@]}" --train-iters 4 --load "$tmp/dense" --save "$tmp/dry" \
  --save-interval 2 --moe-use-upcycling --dry-run > "$tmp/dry.log" 2>&1 || { cat "$tmp/dry.log"; fail "dry run"; }
grep -q "iteration 3 fits this model" "$tmp/dry.log" || { cat "$tmp/dry.log"; fail "dry run: no load check"; }

# The upcycled checkpoint resumes as any MoE checkpoint, bitwise.
run half "${common[@]}" "${moe[@]}" --train-iters 4 --load "$tmp/dense" --save "$tmp/half" --save-interval 2 \
  --exit-interval 2 --moe-use-upcycling
run rest "${common[@]}" "${moe[@]}" --train-iters 4 --load "$tmp/half" --save "$tmp/half" --save-interval 2
diff <(grep -E "^[34] " "$tmp/up.losses") "$tmp/rest.losses" || fail "the resumed upcycled run differs (above)"

refused "--save $tmp/up already holds a checkpoint" "${common[@]}" "${moe[@]}" --train-iters 4 --load "$tmp/dense" \
  --save "$tmp/up" --moe-use-upcycling
refused "is a mixture-of-experts checkpoint" "${common[@]}" "${moe[@]}" --train-iters 4 --load "$tmp/up" \
  --save "$tmp/x" --moe-use-upcycling
refused "is a mixture-of-experts checkpoint" "${common[@]}" "${moe[@]}" --train-iters 4 --load "$tmp/up" \
  --save "$tmp/x" --moe-use-upcycling --dry-run
refused "--moe-upcycling-granularity 2: gptrain takes only 1" "${common[@]}" "${moe[@]}" --train-iters 4 \
  --load "$tmp/dense" --save "$tmp/x" --moe-use-upcycling --moe-upcycling-granularity 2
refused "--moe-use-upcycling needs --save" "${common[@]}" "${moe[@]}" --train-iters 4 --load "$tmp/dense" \
  --moe-use-upcycling
refused "--moe-use-upcycling needs --num-experts" "${common[@]}" --train-iters 4 --load "$tmp/dense" \
  --save "$tmp/x" --moe-use-upcycling
refused "--moe-use-upcycling: --load $tmp/none holds no checkpoint" "${common[@]}" "${moe[@]}" --train-iters 4 \
  --load "$tmp/none" --save "$tmp/x" --moe-use-upcycling
run biased --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 --max-position-embeddings 16 \
  --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --mock-data --vocab-size 97 --ffn-hidden-size 48 \
  --train-iters 1 --save "$tmp/biased" --save-interval 1
refused "add_bias_linear (checkpoint true, this run false)" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16 \
  --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 4 --lr 1e-2 --mock-data --vocab-size 97 \
  --ffn-hidden-size 48 --train-iters 2 --load "$tmp/biased" --save "$tmp/x" "${moe[@]}" --disable-bias-linear \
  --moe-use-upcycling
[ ! -e "$tmp/x" ] || [ -z "$(ls "$tmp/x")" ] || fail "a refused run wrote to --save"
echo "upcycling: first loss == dense loss, trains, resumes bitwise; refusals named"
