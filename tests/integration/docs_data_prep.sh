#!/usr/bin/env bash
# The data-preparation commands of docs/data.md ("One command per model family"), run verbatim (build/bin/
# replaced by the build's bin directory) in a directory laid out as the commands expect: the shipped GPT-2 files, and
# tokenizers of each kind trained here on the shared corpora standing in for the real repositories'
# (a NeoX-like tokenizer.json with NFC, Llama-2's legacy and Mistral's Metaspace tokenizer.json with byte
# fallback, a Llama-2-style SentencePiece .model, Llama-3's with its template, a 128000-rank tiktoken file). Every command must succeed and its
# ids equal the reference: Hugging Face tokenizers (GPT-2 files, tokenizer.json), Megatron's Llama2Tokenizer over PyPI
# sentencepiece, or PyPI tiktoken built as
# Megatron's TikTokenizer builds it. ~1.5 min on 2 cores.
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_corpora
need_python tokenizers tiktoken sentencepiece regex numpy
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
export RAYON_NUM_THREADS=2
pyt=$GPTRAIN_SRC/tests/python
corpora=$GPTRAIN_SHARED/data/corpora
source "$GPTRAIN_SRC/tests/integration/tokenizer_checks.bash"

# The commands, one per line (continuation lines joined).
doc=$GPTRAIN_SRC/docs/data.md
sed -n '/<!-- data-prep-commands: begin/,/<!-- data-prep-commands: end/p' "$doc" |
  sed -e ':a' -e '/\\$/N; s/\\\n//; ta' | grep '^build/bin/preprocess_data ' > commands.txt || true
[ "$(wc -l < commands.txt)" -ge 7 ] ||
  { cat commands.txt; echo "FAIL: expected 7 preprocess_data commands between the data-prep-commands markers of $doc"; exit 1; }

# The files the commands name.
cp "$corpora/tinyshakespeare_speeches.jsonl" corpus.jsonl
mkdir -p data gpt2 pythia-1b Meta-Llama-3-8B/original
cp "$GPTRAIN_SRC/data/gpt2/vocab.json" "$GPTRAIN_SRC/data/gpt2/merges.txt" gpt2/
"$py" "$pyt/hf_tokenizer_parity.py" train hf "$corpora"/*.jsonl > /dev/null
"$py" "$pyt/hf_metaspace_parity.py" train sp "$corpora"/*.jsonl > /dev/null
"$py" "$pyt/tiktoken_parity.py" train tk "$corpora"/*.jsonl > /dev/null
"$py" "$pyt/spm_tokenizer_parity.py" train spm "$corpora"/*.jsonl > /dev/null
cp hf/neox/tokenizer.json pythia-1b/
cp -r sp/llama2 Llama-2-7b-hf
cp spm/llama.model Llama-2-7b-hf/tokenizer.model
cp -r sp/mistral Mixtral-8x7B-v0.1
cp hf/llama3/tokenizer.json hf/llama3/tokenizer_config.json Meta-Llama-3-8B/
"$py" - tk/vocab.tiktoken Meta-Llama-3-8B/original/tokenizer.model <<'PY'
import sys
# 128000 ranks as Llama-3's file has: the trained ones, then tokens no text reaches (0xF8 never occurs in UTF-8).
lines = [l for l in open(sys.argv[1]) if l.strip()]
import base64
extra = [f"{base64.b64encode(bytes([0xF8]) + r.to_bytes(3, 'big')).decode()} {r}" for r in range(len(lines), 128000)]
open(sys.argv[2], "w").write("".join(lines) + "\n".join(extra) + "\n")
PY

while IFS= read -r cmd; do
  prefix=$(echo "$cmd" | sed -n 's/.*--output-prefix \([^ ]*\).*/\1/p')
  if eval "$GPTRAIN_BIN/${cmd#build/bin/}" > log.txt 2>&1; then
    ok "ran: ${cmd:0:110}..."
  else
    bad "failed: $cmd: $(tail -3 log.txt)"
    continue
  fi
  out=${prefix}_text_document
  case $prefix in
    data/gpt2) "$py" "$pyt/check_tokenizer_parity.py" --jsonl corpus.jsonl --prefix $out --vocab gpt2/vocab.json \
                 --merges gpt2/merges.txt --append-eod ;;
    data/pythia) "$py" "$pyt/hf_tokenizer_parity.py" check --tokenizer pythia-1b --jsonl corpus.jsonl --prefix $out --append-eod ;;
    data/llama2) "$py" "$pyt/hf_tokenizer_parity.py" check --tokenizer Llama-2-7b-hf --jsonl corpus.jsonl --prefix $out --append-eod ;;
    data/llama2-spm) "$py" "$pyt/spm_tokenizer_parity.py" check --model Llama-2-7b-hf/tokenizer.model --type Llama2Tokenizer \
                       --jsonl corpus.jsonl --prefix $out --append-eod ;;
    data/mixtral) "$py" "$pyt/hf_tokenizer_parity.py" check --tokenizer Mixtral-8x7B-v0.1 --jsonl corpus.jsonl --prefix $out --append-eod ;;
    data/llama3) "$py" "$pyt/hf_tokenizer_parity.py" check --tokenizer Meta-Llama-3-8B --jsonl corpus.jsonl --prefix $out --append-eod ;;
    data/llama3-tiktoken) "$py" "$pyt/tiktoken_parity.py" check --vocab Meta-Llama-3-8B/original/tokenizer.model --pattern v2 \
                            --vocab-size 129000 --num-special 1000 --jsonl corpus.jsonl --prefix $out --append-eod ;;
    *) false ;;
  esac && ok "$prefix: ids equal the reference" || bad "$prefix: ids differ (or no check for this prefix)"
done < commands.txt

[ "$fails" -eq 0 ] || { echo "docs_data_prep: $fails failures"; exit 1; }
echo "docs_data_prep: OK"
