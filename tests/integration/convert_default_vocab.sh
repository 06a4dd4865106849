#!/usr/bin/env bash
# A run trained without --vocab-file/--merge-file used the GPT-2 files shipped in data/gpt2/;
# convert_to_hf then writes exactly those files (the quick start relies on this).
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
cd "$GPTRAIN_TMP"
"$GPTRAIN_BIN/pretrain_gpt" --device cpu --mock-data --num-layers 1 --hidden-size 32 --num-attention-heads 2 \
  --seq-length 16 --max-position-embeddings 16 --micro-batch-size 2 --train-iters 1 --lr 1e-3 --log-interval 1 \
  --save ck --save-interval 1 > train.log 2>&1 || { cat train.log; exit 1; }
"$GPTRAIN_BIN/convert_to_hf" --load ck --output hf > convert.log 2>&1 || { cat convert.log; exit 1; }
cmp hf/vocab.json "$GPTRAIN_SRC/data/gpt2/vocab.json"
cmp hf/merges.txt "$GPTRAIN_SRC/data/gpt2/merges.txt"
echo "convert_to_hf used the shipped GPT-2 tokenizer files"
