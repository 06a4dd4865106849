#!/usr/bin/env bash
# bench_preprocess.sh — preprocess_data throughput vs Hugging Face tokenizers (single-threaded), same
# input, same run. Input: ../shared/data/corpora/python311_docs.jsonl (8.6 MB, 395 docs) repeated
# REPEAT times (default 3). Prints a table: wall-clock MB/s and tokens/s (whole app: read, parse,
# tokenize, write), per worker, and per CPU-second of the workers (JSON parsing + tokenizing; the
# HF row counts json.loads + encode the same way). ~1-2 min on 2 cores, most of it HF.
#
#   tests/bench/bench_preprocess.sh [build_dir] [workers list, default "1 2"]
#   REPEAT=5 tests/bench/bench_preprocess.sh build "1 2 4"
#   TOKENIZER_MODEL=DIR_OR_tokenizer.json tests/bench/bench_preprocess.sh build "1 2"
#       HuggingFaceTokenizer against tokenizers with the same tokenizer.json (e.g. a fixture written by
#       tests/python/hf_tokenizer_parity.py train OUT ../shared/data/corpora/*.jsonl, or a SentencePiece-style
#       one by tests/python/hf_metaspace_parity.py train OUT ...)
#   SPM_MODEL=file.model [SPM_TYPE=Llama2Tokenizer] tests/bench/bench_preprocess.sh build "1 2"
#       a SentencePiece type (default Llama2Tokenizer) against PyPI sentencepiece with the same .model (e.g.
#       the llama fixture of tests/python/spm_tokenizer_parity.py train OUT ../shared/data/corpora/*.jsonl)
#   TIKTOKEN_MODEL=vocab.json TIKTOKEN_VOCAB_SIZE=4000 [TIKTOKEN_PATTERN=v2] tests/bench/bench_preprocess.sh build "1 2"
#       TikTokenizer against PyPI tiktoken built from the same ranks (a vocabulary written by
#       tests/python/tiktoken_parity.py train OUT ../shared/data/corpora/*.jsonl)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
workers_list=${2:-"1 2"}
repeat=${REPEAT:-3}
py=${GPTRAIN_PYTHON:-$root/.pyref/bin/python}
shared=${GPTRAIN_SHARED:-$root/../shared}
corpus=$shared/data/corpora/python311_docs.jsonl
tmp=$(mktemp -d /tmp/bench_preprocess.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
[ -x "$build/bin/preprocess_data" ] || { echo "build $build/bin/preprocess_data first"; exit 1; }
for _ in $(seq "$repeat"); do cat "$corpus"; done > "$tmp/in.jsonl"
vocab=$root/data/gpt2/vocab.json
merges=$root/data/gpt2/merges.txt
tok_flags=(--tokenizer-type GPT2BPETokenizer --vocab-file "$vocab" --merge-file "$merges")
hf_flags=(--vocab "$vocab" --merges "$merges")
if [ -n "${TOKENIZER_MODEL:-}" ]; then
  json=$TOKENIZER_MODEL
  [ -d "$json" ] && json=$json/tokenizer.json
  tok_flags=(--tokenizer-type HuggingFaceTokenizer --tokenizer-model "$TOKENIZER_MODEL")
  hf_flags=(--tokenizer-json "$json")
  echo "tokenizer: $TOKENIZER_MODEL"
fi
ref_name="hf_tokenizers(1-thread)"
if [ -n "${SPM_MODEL:-}" ]; then
  spm_type=${SPM_TYPE:-Llama2Tokenizer}
  tok_flags=(--tokenizer-type "$spm_type" --tokenizer-model "$SPM_MODEL")
  hf_flags=(--spm-model "$SPM_MODEL")
  [ "$spm_type" = Llama2Tokenizer ] && hf_flags+=(--spm-bos)
  ref_name="sentencepiece(1-thread)"
  echo "tokenizer: $spm_type $SPM_MODEL (reference: sentencepiece)"
fi
if [ -n "${TIKTOKEN_MODEL:-}" ]; then
  pattern=${TIKTOKEN_PATTERN:-v2}
  tok_flags=(--tokenizer-type TikTokenizer --tokenizer-model "$TIKTOKEN_MODEL" --tiktoken-pattern "$pattern"
             --vocab-size "${TIKTOKEN_VOCAB_SIZE:?set TIKTOKEN_VOCAB_SIZE}")
  hf_flags=(--tiktoken "$TIKTOKEN_MODEL" --pattern "$pattern" --vocab-size "$TIKTOKEN_VOCAB_SIZE")
  ref_name="tiktoken(1-thread)"
  echo "tokenizer: TikTokenizer $TIKTOKEN_MODEL, pattern $pattern, vocabulary $TIKTOKEN_VOCAB_SIZE"
fi

rows=()
tokens_ref=""
for w in $workers_list; do
  t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S %M" -o "$tmp/time$w" "$build/bin/preprocess_data" --input "$tmp/in.jsonl" --output-prefix "$tmp/out$w" "${tok_flags[@]}" \
    --workers "$w" --log-interval 0 > "$tmp/log$w" 2>&1
  t1=$(date +%s.%N)
  bytes=$(stat -c %s "$tmp/in.jsonl")
  tokens=$(sed -n 's/.*key "text": \([0-9]*\) tokens.*/\1/p' "$tmp/log$w")
  cpu=$(sed -n 's/.*workers: \([0-9.]*\) CPU-s.*/\1/p' "$tmp/log$w")
  tokens_ref=${tokens_ref:-$tokens}
  proc_cpu=$(awk '{print $1 + $2}' "$tmp/time$w")
  echo "preprocess_data --workers $w: peak RSS $(awk '{print int($3 / 1024)}' "$tmp/time$w") MiB"
  rows+=("preprocess_data $w $t0 $t1 $bytes $tokens $cpu $proc_cpu")
done

hf=$(/usr/bin/time -f "%U %S" -o "$tmp/time_hf" "$py" "$root/tests/python/bench_hf_tokenizers.py" --jsonl "$tmp/in.jsonl" "${hf_flags[@]}")
hf_proc_cpu=$(awk '{print $1 + $2}' "$tmp/time_hf")
eval "$(echo "$hf" | tr ' ' '\n' | sed 's/^/hf_/')"

"$py" - "$tokens_ref" "$hf_tokens" "${rows[@]}" "$ref_name 1 0 $(echo "$hf_tok_wall + $hf_json_wall" | bc -l) $hf_bytes $hf_tokens $(echo "$hf_tok_cpu + $hf_json_cpu" | bc -l) $hf_proc_cpu" << 'PY'
import sys
ours, theirs = sys.argv[1], sys.argv[2]
import os
print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} (wall-clock columns are only meaningful on an idle machine)")
print(f"input: python311_docs.jsonl x{__import__('os').environ.get('REPEAT', '3')}; tokens: preprocess_data {ours}, HF {theirs}"
      + ("" if ours == theirs else "  <-- MISMATCH"))
hdr = ("implementation", "workers", "wall s", "MB/s", "Mtok/s", "MB/s/worker", "worker CPU s", "MB/s per worker CPU-s",
       "Mtok/s per worker CPU-s", "process CPU s", "MB/s per process CPU-s")
print("| " + " | ".join(hdr) + " |")
print("|" + "|".join("---" for _ in hdr) + "|")
hf_cpu_rate = None
rows = []
for r in sys.argv[3:]:
    name, w, t0, t1, b, t, cpu, pcpu = r.split()
    w, wall, b, t, cpu, pcpu = int(w), float(t1) - float(t0), int(b), int(t), float(cpu), float(pcpu)
    rows.append((name, w, wall, b, t, cpu, pcpu))
for name, w, wall, b, t, cpu, pcpu in rows:
    print(f"| {name} | {w} | {wall:.2f} | {b / 1e6 / wall:.1f} | {t / 1e6 / wall:.2f} | {b / 1e6 / wall / w:.1f} | "
          f"{cpu:.2f} | {b / 1e6 / cpu:.1f} | {t / 1e6 / cpu:.2f} | {pcpu:.2f} | {b / 1e6 / pcpu:.1f} |")
hf, ours = rows[-1], rows[0]
print(f"preprocess_data (1 worker) / {hf[0]}: {(ours[3] / ours[5]) / (hf[3] / hf[5]):.1f}x per worker CPU-second, "
      f"{(ours[3] / ours[6]) / (hf[3] / hf[6]):.1f}x per process CPU-second, {(ours[3] / ours[2]) / (hf[3] / hf[2]):.1f}x wall")
print("(reference worker CPU = json.loads + encode; process CPU includes start-up: Python imports, vocab loading)")
PY
