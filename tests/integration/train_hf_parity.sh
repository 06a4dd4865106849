#!/usr/bin/env bash
# Training parity with Hugging Face: a random tiny GPT2LMHeadModel (transformers) is converted with
# convert_from_hf, trained 10 iterations by pretrain_gpt (--finetune: weights only, fresh AdamW) and by
# transformers + torch.optim.AdamW on the same batches (dropout off, 2 micro-batches of gradient
# accumulation, weight decay on matrices only, clip 1.0). Per-iteration losses must agree within 1e-5
# relative (tests/python/hf_train_parity.py). ~20 s.
set -euo pipefail
source "$(dirname "$0")/hf_train_common.bash"
hf_train_setup
iters=10 gbs=4 mbs=2 seq=16 vocab=100 seed=5 lr=1e-2 wd=0.1 b1=0.9 b2=0.95 eps=1e-8 clip=1.0
"$bin/pretrain_gpt" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length $seq \
  --max-position-embeddings 16 --micro-batch-size $mbs --global-batch-size $gbs --train-iters $iters \
  --lr $lr --lr-decay-style constant --weight-decay $wd --adam-beta1 $b1 --adam-beta2 $b2 --adam-eps $eps \
  --clip-grad $clip --hidden-dropout 0 --attention-dropout 0 --mock-data --vocab-size $vocab --seed $seed \
  --load "$tmp/ckpt" --finetune --log-interval 1 --eval-iters 0 --metrics-file "$tmp/metrics.jsonl" > "$tmp/train.log"
"$py" "$script" check "$tmp/hf" "$tmp/metrics.jsonl" $iters $gbs $mbs $seq $vocab $seed $lr $wd $b1 $b2 $eps $clip
