#!/usr/bin/env bash
# Family parity, Llama-3.1 and Llama-3.2: LlamaForCausalLM with rope_scaling "llama3" (llama31: untied,
# factor 8, head dim 16; llama32: tied embeddings, factor 32, head dim 32 != hidden / heads, low/high
# factors 1.5/6), original length below the test's positions so kept, blended and divided frequencies
# all occur. A tiny random transformers model is converted with convert_from_hf; gptrain_forward's logits
# must match transformers' (max |diff| <= 1e-5) and 10 iterations of pretrain_gpt --finetune (with
# --use-rope-scaling and its factors) the losses and trained weights of transformers + torch.optim.AdamW.
# Then --load of the Llama-3.1 checkpoint without --use-rope-scaling is refused, naming the flags.
# The same parity for Megatron's other RoPE scalings on a Llama, from Hugging Face's rope_scaling "linear"
# (--rotary-seq-len-interpolation-factor 4) and "yarn" (--position-embedding-type yarn, factor 4 over the
# original length 64, betas 16 / 2: kept, blended and interpolated pairs, cos / sin scaled by 0.1 ln 4 + 1);
# the YaRN checkpoint loaded without its flags is refused.
# tests/python/family_parity.py. ~90 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/family_common.bash"
family_setup
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
for fam in llama31 llama32 llama_linear llama_yarn; do
  mkdir -p "$GPTRAIN_TMP/$fam"
  "$GPTRAIN_PYTHON" family_parity.py --family "$fam" --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP/$fam" \
    --logits-tol 1e-5 --iters 10
done

# The scaling shows in no tensor name or shape: the checkpoint's recorded scaling is checked on --load.
t=$GPTRAIN_TMP/llama31
mapfile -t plain < <("$GPTRAIN_PYTHON" -c '
import family_parity
flags = family_parity.tiny_config("llama31")[1]
i = flags.index("--use-rope-scaling")
print("\n".join(flags[:i] + flags[i + 9:]))  # the switch and its four valued flags')
if "$GPTRAIN_BIN/pretrain_gpt" "${plain[@]}" --micro-batch-size 2 --global-batch-size 2 --train-iters 1 --lr 1e-4 \
  --load "$t/ckpt" --finetune --data-path "$t/corpus_text_document" --split 100,0,0 --data-cache-path "$t/cache" \
  --eval-iters 0 --device cpu > "$t/no_scaling.log" 2>&1; then
  echo "FAIL: --load of a rope-scaled checkpoint without --use-rope-scaling was accepted"; exit 1
fi
grep -q "the checkpoint's RoPE has Llama-3 scaling (--use-rope-scaling --rope-scaling-factor 8" "$t/no_scaling.log" ||
  { echo "FAIL: no rope-scaling refusal in:"; tail -5 "$t/no_scaling.log"; exit 1; }
echo "ok: refused: $(grep -m1 -o "the checkpoint's RoPE .*" "$t/no_scaling.log")"

# YaRN, like the Llama-3 scaling, shows in no tensor: a run with plain RoPE is refused, naming the flags.
t=$GPTRAIN_TMP/llama_yarn
mapfile -t plain < <("$GPTRAIN_PYTHON" -c '
import family_parity
flags = family_parity.tiny_config("llama_yarn")[1]
i = flags.index("yarn")
print("\n".join(flags[:i] + ["rope"]))  # rope instead of yarn; the YaRN numbers come last')
if "$GPTRAIN_BIN/pretrain_gpt" "${plain[@]}" --micro-batch-size 2 --global-batch-size 2 --train-iters 1 --lr 1e-4 \
  --load "$t/ckpt" --finetune --data-path "$t/corpus_text_document" --split 100,0,0 --data-cache-path "$t/cache" \
  --eval-iters 0 --device cpu > "$t/no_yarn.log" 2>&1; then
  echo "FAIL: --load of a YaRN checkpoint with plain RoPE was accepted"; exit 1
fi
grep -q "the checkpoint's RoPE has yarn {" "$t/no_yarn.log" ||
  { echo "FAIL: no YaRN refusal in:"; tail -5 "$t/no_yarn.log"; exit 1; }
echo "ok: refused: $(grep -m1 -o "the checkpoint's RoPE .*" "$t/no_yarn.log" | cut -c1-200)"
