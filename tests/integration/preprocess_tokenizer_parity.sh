#!/usr/bin/env bash
# preprocess_data's token ids == Hugging Face tokenizers (ByteLevel BPE from the same GPT-2 files) on
# the three shared corpora, on hand-picked hard strings and on a Unicode sweep (both sides of every
# letter/number/space class boundary); with and without --append-eod and --endoftext-as-text.
# The .bin/.idx are parsed in Python from the documented layout. ~20 s on 2 cores.
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_corpora
need_python tokenizers numpy
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
vocab=$GPTRAIN_SRC/data/gpt2/vocab.json
merges=$GPTRAIN_SRC/data/gpt2/merges.txt
corpora=$GPTRAIN_SHARED/data/corpora

run() {  # run NAME JSONL [extra preprocess flags]; then the parity check with the same flags
  local name=$1 jsonl=$2
  shift 2
  "$GPTRAIN_BIN/preprocess_data" --input "$jsonl" --output-prefix "$name" --tokenizer-type GPT2BPETokenizer \
    --vocab-file "$vocab" --merge-file "$merges" --workers 2 --log-interval 0 "$@" > /dev/null
  local check=()
  for f in "$@"; do
    case $f in --append-eod | --endoftext-as-text) check+=("$f") ;; esac
  done
  echo -n "$name: "
  "$py" "$GPTRAIN_SRC/tests/python/check_tokenizer_parity.py" --jsonl "$jsonl" --prefix "${name}_text_document" \
    --vocab "$vocab" --merges "$merges" "${check[@]}"
}

run speeches "$corpora/tinyshakespeare_speeches.jsonl" --append-eod
run chunks "$corpora/tinyshakespeare_chunks4k.jsonl"
run pydocs "$corpora/python311_docs.jsonl" --append-eod
"$py" "$GPTRAIN_SRC/tests/python/make_hard_tokenizer_strings.py" hard.jsonl --sweep=boundaries
run hard hard.jsonl
run hard_eod hard.jsonl --append-eod
run hard_astext hard.jsonl --endoftext-as-text
echo "preprocess_tokenizer_parity: OK"
