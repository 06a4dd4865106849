#!/usr/bin/env bash
# Loss curves of --bf16-stochastic-rounding (bf16 weights, no fp32 master, stochastically rounded AdamW
# updates) against the fp32-master run, on Tiny Shakespeare (GPT-2 BPE) with a small GPT (2 layers, hidden
# 64, seq 64, batch 8), 500 iterations, LR 1e-3 with 50 warm-up iterations and cosine decay, on the CPU
# backend (fp32 compute: the weights are bf16 values held in fp32). Prints the mean loss of iterations
# 451-500 of each run and their relative difference (the claim: within 2%).
#   tests/bench/bench_bf16_stochastic_rounding.sh [build/bin] [shared dir]        ~2-4 min
set -euo pipefail
bin=${1:-${GPTRAIN_BIN:-build/bin}}
shared=${2:-${GPTRAIN_SHARED:-../shared}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/preprocess_data" --input "$shared/data/corpora/tinyshakespeare_chunks4k.jsonl" --output-prefix "$tmp/sh" \
  --tokenizer-type GPT2BPETokenizer --vocab-file "$shared/data/gpt2/vocab.json" \
  --merge-file "$shared/data/gpt2/merges.txt" --append-eod > "$tmp/prep.log" 2>&1 || { cat "$tmp/prep.log"; exit 1; }
M=(--device cpu --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64
  --max-position-embeddings 64 --micro-batch-size 8 --global-batch-size 8 --train-iters 500 --lr 1e-3
  --min-lr 1e-4 --lr-decay-style cosine --lr-warmup-iters 50 --weight-decay 0.1 --clip-grad 1.0
  --hidden-dropout 0 --attention-dropout 0 --seed 1234 --log-interval 50 --eval-iters 0
  --data-path "$tmp/sh_text_document" --split 100,0,0 --tokenizer-type GPT2BPETokenizer
  --vocab-file "$shared/data/gpt2/vocab.json" --merge-file "$shared/data/gpt2/merges.txt")
tail_mean() {  # mean lm loss of iterations 451-500 of a metrics file
  python3 -c 'import json, sys
v = [json.loads(l)["losses"]["lm loss"] for l in open(sys.argv[1]) if json.loads(l).get("event") == "train" and json.loads(l)["iteration"] > 450]
print(f"{sum(v) / len(v):.5f}")' "$1"
}
for run in master sr; do
  extra=()
  [ "$run" = sr ] && extra=(--bf16-stochastic-rounding)
  start=$(date +%s)
  "$bin/pretrain_gpt" "${M[@]}" "${extra[@]}" --metrics-file "$tmp/$run.jsonl" > "$tmp/$run.log" 2>&1 ||
    { cat "$tmp/$run.log"; exit 1; }
  echo "$run: mean loss of iterations 451-500 $(tail_mean "$tmp/$run.jsonl") ($(($(date +%s) - start)) s)"
  grep -E "iteration +(50|250|500)/" "$tmp/$run.log" | sed -E 's/.*iteration +([0-9]+)\/.*lm loss: ([0-9.E+-]+).*/  iteration \1: \2/'
done
a=$(tail_mean "$tmp/master.jsonl")
b=$(tail_mean "$tmp/sr.jsonl")
awk -v a="$a" -v b="$b" 'BEGIN { d = (b - a) / a; printf "relative difference (stochastic rounding - fp32 master) / fp32 master: %+.4f\n", d; exit !(d < 0.02 && d > -0.02) }'
