#!/usr/bin/env bash
# python_refs.sh — the Python references that tests compare against, in .pyref/ (a venv on top of
# Debian's python3-torch): transformers, tokenizers, safetensors, numpy, tensorboard, sentencepiece (+ protobuf,
# which transformers needs to build LlamaTokenizerFast from a tokenizer.model), tiktoken, ml_dtypes (FP8 casts;
# pinned, as its 0.6 pulls in numpy 2, which Debian's torch does not load). Idempotent.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.pyref"
py=/usr/bin/python3
want="transformers==4.46.3 tokenizers safetensors tensorboard sentencepiece protobuf tiktoken ml_dtypes==0.4.1"
if [ ! -x "$venv/bin/python" ]; then
  "$py" -m venv --system-site-packages "$venv"
fi
if ! "$venv/bin/python" -c "import torch, transformers, tokenizers, safetensors, numpy, tensorboard, sentencepiece, google.protobuf, tiktoken, ml_dtypes" 2>/dev/null; then
  echo "python_refs: installing $want into .pyref"
  "$venv/bin/pip" install -q --disable-pip-version-check $want
fi
