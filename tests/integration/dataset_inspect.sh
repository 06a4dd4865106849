#!/usr/bin/env bash
# inspect_data on a real corpus (tinyshakespeare speeches through preprocess_data --append-eod):
# summary counts/histogram and decoded documents equal the JSONL text and HF's GPT-2 tokenizer; sample
# fingerprints equal the numpy reference on this GPT-2-tokenized data; --decode and error messages. ~15 s.
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_corpora
need_python numpy transformers
PY=$py
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
corpus=$GPTRAIN_SHARED/data/corpora/tinyshakespeare_speeches.jsonl
vocab=$GPTRAIN_SRC/data/gpt2/vocab.json
merges=$GPTRAIN_SRC/data/gpt2/merges.txt
INSPECT="$GPTRAIN_BIN/inspect_data"

"$GPTRAIN_BIN/preprocess_data" --input "$corpus" --output-prefix shakes --tokenizer-type GPT2BPETokenizer \
  --append-eod --workers 2 --log-interval 0
P=shakes_text_document
"$INSPECT" summary --data-path $P > summary.txt
cat summary.txt
mkdir docs
for i in 0 1 17 4000 7221; do
  "$INSPECT" doc --data-path $P --index $i > docs/doc_$i.txt
  "$INSPECT" doc --data-path $P --index $i --ids > docs/ids_$i.txt
done
"$PY" "$GPTRAIN_SRC/tests/python/dataset_inspect_check.py" "$corpus" "$vocab" "$merges" summary.txt docs

# Sample order on GPT-2 data equals the numpy reference.
args=(--data-path $P --split 949,50,1 --seq-length 128 --seed 42 --train-samples 2500 --valid-samples 64
      --test-samples 8)
"$PY" "$GPTRAIN_SRC/tests/python/dataset_index_ref.py" samples "${args[@]}" > ref.txt 2> /dev/null
"$INSPECT" samples "${args[@]}" --fingerprint > got.txt
cmp -s ref.txt got.txt || { echo "FAIL: fingerprints differ from the numpy reference"; exit 1; }
echo "ok   $(wc -l < got.txt) sample fingerprints equal the numpy reference"

# --decode prints text; every decoded window is a piece of the corpus, documents ending in <|endoftext|>.
"$INSPECT" samples "${args[@]}" --decode --limit 2 > decoded.txt
grep -q "^=== train 1$" decoded.txt && grep -q "<|endoftext|>" decoded.txt
echo "ok   --decode"
"$INSPECT" samples "${args[@]}" --limit 1 | grep -qE "^train 0( [0-9]+){129}$"
echo "ok   token ids (129 per sample line)"

# Errors name the problem.
expect_error() {
  local needle=$1; shift
  if "$@" > /dev/null 2> err.txt; then echo "FAIL: accepted: $*"; exit 1; fi
  grep -qF -- "$needle" err.txt || { echo "FAIL: no '$needle' in: $(cat err.txt)"; exit 1; }
  echo "ok   error: $(head -c 160 err.txt)"
}
expect_error "outside [0, 7222)" "$INSPECT" doc --data-path $P --index 7222
expect_error "not a number" "$INSPECT" samples --data-path $P --split "9.9.9" --seq-length 8
expect_error "no data" "$INSPECT" samples --seq-length 8
expect_error "--split applies to --data-path only" "$INSPECT" samples --train-data-path $P --split 1 --seq-length 8
expect_error "needs a sample count" "$INSPECT" samples --data-path 1 $P 1 $P --seq-length 8
expect_error "does/not/exist.idx: cannot open" "$INSPECT" samples --data-path does/not/exist --seq-length 8
echo "PASS"
