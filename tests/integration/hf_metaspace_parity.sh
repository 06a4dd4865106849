#!/usr/bin/env bash
# --tokenizer-type HuggingFaceTokenizer with SentencePiece-converted tokenizer.json files (Llama-2 /
# Mistral / Mixtral style): a character-level BPE with byte fallback trained here with Hugging Face
# `tokenizers` on the shared corpora and laid out as Llama's files are (tests/python/hf_metaspace_parity.py
# says what each fixture holds: Llama-2's Prepend/Replace normalizers without a pre-tokenizer, Metaspace
# first/always with and without split, ignore_merges, the unknown token without byte fallback).
# preprocess_data's ids equal tokenizers' encode(text) on hard strings (scripts, emoji, digits,
# white-space runs, control characters, a Unicode sweep) and on the three corpora (--workers 1 and 4 write
# the same bytes); inspect_data's decode equals tokenizers' decode; unimplemented components are refused
# by name. ~1.5 min on the shared 2-core machine.
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_corpora
need_python tokenizers numpy
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
export RAYON_NUM_THREADS=2
script=$GPTRAIN_SRC/tests/python/hf_metaspace_parity.py
check=$GPTRAIN_SRC/tests/python/hf_tokenizer_parity.py
corpora=$GPTRAIN_SHARED/data/corpora
source "$GPTRAIN_SRC/tests/integration/tokenizer_checks.bash"

"$py" "$script" train fx "$corpora"/*.jsonl
"$py" "$check" hard hard.jsonl
cat "$corpora"/*.jsonl > corpora.jsonl

for f in llama2 mistral split unk; do
  tokenize $f hard.jsonl hard_$f --workers 2
  parity $f hard.jsonl hard_$f
  for i in 0 3 5 21 24 40 60 100 150; do
    tok=(--data-path hard_${f}_text_document --index $i --tokenizer-type HuggingFaceTokenizer --tokenizer-model fx/$f)
    "$GPTRAIN_BIN/inspect_data" doc "${tok[@]}" --ids > ids.txt
    "$GPTRAIN_BIN/inspect_data" doc "${tok[@]}" > text.txt
    "$py" "$script" decode fx/$f ids.txt text.txt || bad "$f: decode of document $i differs from tokenizers'"
  done
done
for f in llama2 mistral; do
  tokenize $f corpora.jsonl c1_$f --workers 1 --append-eod
  tokenize $f corpora.jsonl c4_$f --workers 4 --append-eod
  if cmp -s c1_${f}_text_document.bin c4_${f}_text_document.bin && cmp -s c1_${f}_text_document.idx c4_${f}_text_document.idx; then
    ok "$f: --workers 1 and 4 write the same bytes"
  else
    bad "$f: --workers 1 and 4 differ"
  fi
  parity $f corpora.jsonl c4_$f --append-eod
done

mkdir bad
"$py" "$script" bad bad fx/split/tokenizer.json > /dev/null
expect_refusal nfkc "normalizer \"NFKC\""
expect_refusal regex_replace "normalizer"
expect_refusal scheme "prepend_scheme \"sometimes\""
expect_refusal decoder_ctc "decoder \"CTC\""
expect_refusal missing_byte "1 of the 256 <0xNN> tokens missing"

[ "$fails" -eq 0 ] || { echo "hf_metaspace_parity: $fails failures"; exit 1; }
echo "hf_metaspace_parity: OK"
