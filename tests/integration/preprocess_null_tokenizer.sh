#!/usr/bin/env bash
# preprocess_data --tokenizer-type NullTokenizer: text is token ids separated by single spaces (Megatron's
# legacy _NullTokenizer: int() of each, vocabulary --vocab-size + 1, end-of-document id --vocab-size).
# The .bin/.idx hold exactly those ids (a numpy reader of the files, ids from Python's split), with and
# without --append-eod, uint16 below 65500 ids and int32 above (Megatron's optimal_dtype); a document
# that is not ids stops with file:line (or is skipped with --skip-bad-lines), leaving no output.
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_python numpy
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
source "$GPTRAIN_SRC/tests/integration/tokenizer_checks.bash"
"$py" - <<'PY'
import json, random
r = random.Random(1)
for name, v in (("small", 1000), ("large", 70000)):
    with open(f"{name}.jsonl", "w") as f:
        for d in range(300):
            ids = [r.randrange(v + 1) for _ in range(r.randrange(1, 50))]
            f.write(json.dumps({"text": " ".join(map(str, ids))}) + "\n")
PY
check() {  # check JSONL PREFIX VOCAB APPEND_EOD
  "$py" - "$GPTRAIN_SRC/tests/python" "$@" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
import check_tokenizer_parity as c
jsonl, prefix, vocab, eod = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5] == "1"
code, lengths, pointers, docs, tokens = c.read_idx(prefix)
want = []
for line in open(jsonl):
    ids = [int(x) for x in json.loads(line)["text"].split(" ")]
    want += ids + ([vocab] if eod else [])
assert tokens.tolist() == want, "ids differ"
assert (code == 8) == (vocab + 1 < 65500), f"dtype code {code} for vocabulary {vocab + 1}"
print(f"{len(docs) - 1} documents, {len(want)} ids equal, dtype code {code}")
PY
}
for name in small large; do
  v=$([ $name = small ] && echo 1000 || echo 70000)
  for eod in 0 1; do
    flags=()
    [ $eod = 1 ] && flags=(--append-eod)
    "$GPTRAIN_BIN/preprocess_data" --input $name.jsonl --output-prefix ${name}_$eod --tokenizer-type NullTokenizer \
      --vocab-size $v --log-interval 0 --workers 2 "${flags[@]}" > /dev/null
    check $name.jsonl ${name}_${eod}_text_document $v $eod && ok "$name, append-eod $eod" || bad "$name, append-eod $eod"
  done
done
printf '{"text": "1 2 3"}\n{"text": "4 x 5"}\n{"text": "6"}\n' > bad.jsonl
if "$GPTRAIN_BIN/preprocess_data" --input bad.jsonl --output-prefix refused --tokenizer-type NullTokenizer --vocab-size 10 \
  > /dev/null 2> err.txt; then
  bad "a non-id word was accepted"
else
  grep -qF 'bad.jsonl:2: key "text": NullTokenizer: "x" is not a token id' err.txt && ok "refused: $(cat err.txt)" ||
    bad "error without file:line: $(cat err.txt)"
fi
[ ! -e refused_text_document.bin ] || bad "output left behind"
"$GPTRAIN_BIN/preprocess_data" --input bad.jsonl --output-prefix skipped --tokenizer-type NullTokenizer --vocab-size 10 \
  --skip-bad-lines --log-interval 0 > /dev/null 2>&1
"$py" - "$GPTRAIN_SRC/tests/python" <<'PY' && ok "--skip-bad-lines drops the whole document" || bad "--skip-bad-lines kept part of it"
import sys
sys.path.insert(0, sys.argv[1])
import check_tokenizer_parity as c
code, lengths, pointers, docs, tokens = c.read_idx("skipped_text_document")
assert tokens.tolist() == [1, 2, 3, 6] and len(docs) == 3, (tokens, docs)
PY
if "$GPTRAIN_BIN/preprocess_data" --input bad.jsonl --output-prefix refused --tokenizer-type NullTokenizer \
  > /dev/null 2> err.txt; then bad "no --vocab-size accepted"; else
  grep -qF -- "needs --vocab-size" err.txt && ok "no --vocab-size refused" || bad "no --vocab-size: $(cat err.txt)"
fi
[ "$fails" -eq 0 ] || { echo "preprocess_null_tokenizer: $fails failures"; exit 1; }
echo "preprocess_null_tokenizer: OK"
