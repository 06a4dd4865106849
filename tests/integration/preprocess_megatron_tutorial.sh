#!/usr/bin/env bash
# The preprocessing command of the widely copied 2022 Megatron-LM training tutorial runs unchanged
# (only the program name differs): --vocab (then a unique prefix of --vocab-file), --dataset-impl mmap
# and --chunk-size 25, --json-keys content, --workers 32. Its output is byte-identical to the same
# corpus prepared with today's spelling (--vocab-file, one worker), and its token ids equal Hugging
# Face tokenizers' (the parity checker of preprocess_tokenizer_parity.sh).
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_corpora
need_python tokenizers numpy
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
cp "$GPTRAIN_SRC/data/gpt2/vocab.json" vocab.json
cp "$GPTRAIN_SRC/data/gpt2/merges.txt" merges.txt
# The tutorial's corpus has its text under "content" (a code dataset); the Python docs stand in for it.
"$py" - "$GPTRAIN_SHARED/data/corpora/python311_docs.jsonl" codeparrot_data.json <<'PY'
import json, sys
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as out:
    for line in f:
        out.write(json.dumps({"content": json.loads(line)["text"]}) + "\n")
PY

mkdir tutorial && cd tutorial
# As printed in the tutorial, with python tools/preprocess_data.py -> preprocess_data.
"$GPTRAIN_BIN/preprocess_data" \
  --input ../codeparrot_data.json \
  --output-prefix codeparrot \
  --vocab ../vocab.json \
  --dataset-impl mmap \
  --tokenizer-type GPT2BPETokenizer \
  --merge-file ../merges.txt \
  --json-keys content \
  --workers 32 \
  --chunk-size 25 \
  --append-eod >log.txt 2>&1 || { cat log.txt; exit 1; }
grep -q "chunk-size" log.txt || { echo "no info line for --chunk-size"; cat log.txt; exit 1; }
cd ..
"$GPTRAIN_BIN/preprocess_data" --input codeparrot_data.json --output-prefix today --vocab-file vocab.json \
  --merge-file merges.txt --tokenizer-type GPT2BPETokenizer --json-keys content --workers 1 --append-eod >/dev/null 2>&1
for ext in bin idx; do
  cmp "tutorial/codeparrot_content_document.$ext" "today_content_document.$ext" ||
    { echo "tutorial output .$ext differs from the --vocab-file run"; exit 1; }
done
echo "tutorial command: output byte-identical to the --vocab-file run ($(stat -c %s today_content_document.bin) bytes .bin)"
"$py" "$GPTRAIN_SRC/tests/python/check_tokenizer_parity.py" --jsonl codeparrot_data.json --key content \
  --prefix tutorial/codeparrot_content_document --vocab vocab.json --merges merges.txt --append-eod

# Values the 2022 tool refused are refused here too.
if "$GPTRAIN_BIN/preprocess_data" --input codeparrot_data.json --output-prefix x --vocab vocab.json \
  --merge-file merges.txt --tokenizer-type GPT2BPETokenizer --dataset-impl lazy >err.txt 2>&1; then
  echo "--dataset-impl lazy was accepted"; exit 1
fi
grep -q "dataset-impl" err.txt || { echo "the refusal does not name --dataset-impl"; cat err.txt; exit 1; }
echo "preprocess_megatron_tutorial: OK"
