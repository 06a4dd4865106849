#!/usr/bin/env bash
# --optimizer sgd and --optimizer muon against torch on the tiny Llama of family_llama.sh (GQA, SwiGLU, untied):
# pretrain_gpt --load <converted> --finetune for 10 iterations, stopped after iteration 4 and resumed from its
# checkpoint (the momentum buffers restored), must give the losses and trained weights of transformers +
# torch.optim.SGD (momentum 0.9, Megatron's weight-decay groups as L2 decay, LR 0.3), and of
# tests/python/muon_reference.py's Muon (q, k, v orthogonalized separately, [gate; up] as one matrix, fp32
# Newton-Schulz with the quintic coefficients, spectral scale) + torch.optim.AdamW for the embeddings, output
# layer and norms, within 1e-5 relative; and of tests/python/lion_reference.py's Lion (a numpy transcription
# of Megatron's --optimizer lion: Adam's betas, decoupled weight decay) on the same matrices + torch.optim.AdamW
# for the rest. tests/python/family_parity.py. ~75 s.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/family_common.bash"
family_parity_single llama --optimizer sgd --resume-at 4 --parts train
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
"$GPTRAIN_PYTHON" family_parity.py --family llama --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP" --optimizer muon \
  --resume-at 4 --parts train
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP"
"$GPTRAIN_PYTHON" family_parity.py --family llama --bin "$GPTRAIN_BIN" --tmp "$GPTRAIN_TMP" --optimizer lion \
  --resume-at 4 --parts train
