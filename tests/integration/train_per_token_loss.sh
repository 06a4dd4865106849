#!/usr/bin/env bash
# --calculate-per-token-loss. Mock data holds one end-of-document token per sample at a random place, so
# with --eod-mask-loss the micro-batches hold different numbers of loss tokens:
# 1. --eod-mask-loss, default normalization (mean of micro-batch token means) against transformers + torch;
# 2. --eod-mask-loss --calculate-per-token-loss against the per-token reference (each micro-batch's token
#    sum over the global batch's loss tokens); both within 1e-5 relative, and each reference's losses
#    differ from the other normalization's by over 20x that (tests/python/hf_train_parity.py --contrast);
# 3. without --eod-mask-loss every micro-batch holds the same count: --calculate-per-token-loss gives the
#    default's losses and grad norms bit for bit. ~30 s.
set -euo pipefail
source "$(dirname "$0")/hf_train_common.bash"
hf_train_setup
iters=10 gbs=4 mbs=1 seq=16 vocab=100 seed=5 lr=1e-2 wd=0.1 b1=0.9 b2=0.95 eps=1e-8 clip=1.0
run() {  # run NAME FLAGS...
  local name=$1
  shift
  "$bin/pretrain_gpt" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length $seq \
    --max-position-embeddings 16 --micro-batch-size $mbs --global-batch-size $gbs --train-iters $iters \
    --lr $lr --lr-decay-style constant --weight-decay $wd --adam-beta1 $b1 --adam-beta2 $b2 --adam-eps $eps \
    --clip-grad $clip --hidden-dropout 0 --attention-dropout 0 --mock-data --vocab-size $vocab --seed $seed \
    --load "$tmp/ckpt" --finetune --log-interval 1 --eval-iters 0 --metrics-file "$tmp/$name.jsonl" "$@" \
    > "$tmp/$name.log"
}
check() {  # check NAME OPTIONS...
  local name=$1
  shift
  "$py" "$script" check "$tmp/hf" "$tmp/$name.jsonl" $iters $gbs $mbs $seq $vocab $seed $lr $wd $b1 $b2 $eps $clip "$@"
}
echo "== 1. --eod-mask-loss, mean of micro-batch means"
run micro --eod-mask-loss
check micro --eod-mask-loss --contrast
echo "== 2. --eod-mask-loss --calculate-per-token-loss"
run token --eod-mask-loss --calculate-per-token-loss
check token --eod-mask-loss --calculate-per-token-loss --contrast
echo "== 3. equal token counts: per-token == default, bit for bit"
run full_micro
run full_token --calculate-per-token-loss
"$py" - "$tmp/full_micro.jsonl" "$tmp/full_token.jsonl" <<'PY'
import json, sys
def rows(p):
    return [(r["losses"], r["grad_norm"]) for r in map(json.loads, open(p)) if r["event"] == "train"]
a, b = rows(sys.argv[1]), rows(sys.argv[2])
assert len(a) == len(b) == 10 and a == b, list(zip(a, b))
print(f"{len(a)} iterations: losses and grad norms identical")
PY
echo "per-token loss: all checks passed"
