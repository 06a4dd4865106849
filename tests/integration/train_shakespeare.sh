#!/usr/bin/env bash
# A tiny GPT-2 (2 layers, 64 wide, GPT-2 BPE vocabulary) trained for 150 iterations (micro-batch 4 x 32 tokens) on Tiny Shakespeare
# brings the loss clearly down from ln(50257) = 10.8: the training loop, AdamW, schedule and model
# learn for real. ~20 s of CPU time (minutes when the machine is shared).
set -euo pipefail
bin=$GPTRAIN_BIN
tmp=$GPTRAIN_TMP
rm -rf "$tmp" && mkdir -p "$tmp"
corpus=$GPTRAIN_SHARED/data/corpora/tinyshakespeare_chunks4k.jsonl
[ -f "$corpus" ] || { echo "skip: $corpus not found"; exit 77; }
"$bin/preprocess_data" --input "$corpus" --output-prefix "$tmp/shakespeare" --tokenizer-type GPT2BPETokenizer \
  --append-eod --log-interval 0 > "$tmp/preprocess.log" 2>&1
"$bin/pretrain_gpt" --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 \
  --max-position-embeddings 32 --micro-batch-size 4 --global-batch-size 4 --train-iters 150 --lr 5e-3 \
  --min-lr 3e-4 --lr-warmup-iters 10 --lr-decay-style cosine --hidden-dropout 0 --attention-dropout 0 \
  --data-path "$tmp/shakespeare_text_document" --split 98,2,0 --eval-interval 75 --eval-iters 8 \
  --log-interval 25 --metrics-file "$tmp/metrics.jsonl" --data-cache-path "$tmp/cache" > "$tmp/train.log"
cat "$tmp/train.log" | grep -E "iteration +(1|150)/|validation" || true
"$GPTRAIN_PYTHON" - "$tmp/metrics.jsonl" <<'PY'
import json, math, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
train = [r for r in recs if r["event"] == "train"]
val = [r for r in recs if r["event"] == "validation"]
first, last = train[0]["losses"]["lm loss"], train[-1]["losses"]["lm loss"]
print(f"first logged loss {first:.3f}, last {last:.3f}, final validation {val[-1]['losses']['lm loss']:.3f}")
assert abs(first - math.log(50257)) < 0.3, f"a fresh model should start near ln(50257), got {first}"
assert last < 7.0, f"loss did not come down clearly: {last}"
assert val[-1]["losses"]["lm loss"] < 7.2, "validation loss did not come down"
PY
