#!/usr/bin/env bash
# quickstart.sh — clone to a trained model in one command, on any Debian/Ubuntu machine, no GPU and no
# data needed: builds gptrain, makes a real corpus from the Python documentation package's reST sources
# (one document per file), tokenizes it with preprocess_data, trains a small GPT with pretrain_gpt for a
# few minutes (CPU backend; the GPU when one is present), saves a checkpoint, converts it to a Hugging
# Face directory with convert_to_hf and prints a generated sample. ~7 min on 2 cores (build ~4 min,
# training 300 iterations of a 4-layer model ~3 min at ~0.6 s each; the loss falls from ~10.9 to ~5).
#
#   scripts/quickstart.sh                   # everything, in ./quickstart-run/
#   QUICKSTART_ITERS=100 scripts/quickstart.sh   # shorter training
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
run=${QUICKSTART_DIR:-$root/quickstart-run}
bin=$root/${GPTRAIN_BUILD_DIR:-build}/bin
iters=${QUICKSTART_ITERS:-300}
# Idle OpenMP threads sleep instead of spinning: on a small machine spinning threads steal the cores
# their partners need (measured 2x slower steps on a busy 2-core box).
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

step() { printf '\n== %s\n' "$*"; }
missing() { printf 'quickstart: %s is not built yet in this version of gptrain; stopping here.\n' "$1"; exit 0; }

step "1/6 build (scripts/setup.sh)"
GPTRAIN_TARGETS=${GPTRAIN_TARGETS:-"preprocess_data pretrain_gpt convert_to_hf generate"} scripts/setup.sh

step "2/6 corpus: Python documentation reST sources -> JSONL"
need=()
dpkg-query -W -f='${Status}' python3-doc 2>/dev/null | grep -q "install ok installed" || need+=(python3-doc)
command -v jq >/dev/null || need+=(jq)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
fi
src=$(ls -d /usr/share/doc/python3*/html/_sources 2>/dev/null | head -n 1)
[ -n "$src" ] || { echo "quickstart: python3-doc installed no reST sources under /usr/share/doc/python3*/html/_sources" >&2; exit 1; }
mkdir -p "$run"
corpus=$run/pydocs.jsonl
if [ ! -s "$corpus" ]; then
  find "$src" -name '*.rst.txt' | sort | while read -r f; do
    jq -c -R -s --arg src "${f#"$src"/}" '{text: ., src: $src}' "$f"
  done > "$corpus.tmp"
  mv "$corpus.tmp" "$corpus"
fi
echo "corpus: $(wc -l < "$corpus") documents, $(du -h "$corpus" | cut -f1) from $src"

step "3/6 tokenize (preprocess_data, GPT-2 BPE)"
[ -x "$bin/preprocess_data" ] || missing preprocess_data
"$bin/preprocess_data" --input "$corpus" --output-prefix "$run/pydocs" --json-keys text \
  --tokenizer-type GPT2BPETokenizer --append-eod --workers 2

step "4/6 train a small GPT (pretrain_gpt, $iters iterations)"
[ -x "$bin/pretrain_gpt" ] || missing pretrain_gpt
rm -rf "$run/checkpoints"
"$bin/pretrain_gpt" \
  --num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 \
  --micro-batch-size 8 --global-batch-size 8 --train-iters "$iters" \
  --lr 1e-3 --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 20 --weight-decay 0.1 --clip-grad 1.0 \
  --hidden-dropout 0 --attention-dropout 0 \
  --data-path "$run/pydocs_text_document" --split 98,2,0 --tokenizer-type GPT2BPETokenizer \
  --log-interval 10 --eval-interval 100 --eval-iters 5 \
  --save "$run/checkpoints" --save-interval "$iters"

step "5/6 convert to Hugging Face (convert_to_hf)"
[ -x "$bin/convert_to_hf" ] || missing convert_to_hf
rm -rf "$run/hf"
"$bin/convert_to_hf" --load "$run/checkpoints" --output "$run/hf"
ls -l "$run/hf"
# When the test references are installed (scripts/test.sh makes .pyref/), show that transformers loads it.
if [ -x "$root/.pyref/bin/python" ]; then
  "$root/.pyref/bin/python" - "$run/hf" <<'PY' || echo "quickstart: transformers could not load $run/hf" >&2
import sys
from transformers import AutoModelForCausalLM, AutoTokenizer
model = AutoModelForCausalLM.from_pretrained(sys.argv[1]); tok = AutoTokenizer.from_pretrained(sys.argv[1])
import torch  # greedy loop by hand: Debian's torch 1.13 cannot import what generate() probes on Python 3.11
ids = tok("The Python standard library", return_tensors="pt").input_ids
with torch.no_grad():
    for _ in range(max(0, min(20, model.config.max_position_embeddings - ids.shape[1]))):
        ids = torch.cat([ids, model(ids).logits[:, -1:].argmax(-1)], dim=1)
print(f"transformers loaded {type(model).__name__} ({model.num_parameters()} parameters); greedy: {tok.decode(ids[0])!r}")
PY
fi

step "6/6 generate a sample"
[ -x "$bin/generate" ] || missing generate
"$bin/generate" --load "$run/checkpoints" --prompt "The Python standard library" --max-new-tokens 60 --top-k 40 --seed 1

printf '\nquickstart: done. Checkpoint: %s/checkpoints, Hugging Face model: %s/hf\n' "$run" "$run"
