# Sourced by the tokenizer parity tests: counting checks, and preprocess_data with a tokenizer.json
# fixture compared with Hugging Face tokenizers (tests/python/hf_tokenizer_parity.py check).
fails=0
ok() { echo "ok: $*"; }
bad() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# tokenize FIXTURE JSONL PREFIX [flags]: preprocess_data with fx/FIXTURE (a tokenizer.json directory).
tokenize() {
  local fixture=$1 jsonl=$2 prefix=$3
  shift 3
  "$GPTRAIN_BIN/preprocess_data" --input "$jsonl" --output-prefix "$prefix" --tokenizer-type HuggingFaceTokenizer \
    --tokenizer-model "fx/$fixture" --log-interval 0 "$@" > /dev/null
}

# parity FIXTURE JSONL PREFIX [--append-eod]: PREFIX's ids equal tokenizers' encode(text) with fx/FIXTURE.
parity() {
  echo -n "$1 $(basename "$2"): "
  if "$py" "$GPTRAIN_SRC/tests/python/hf_tokenizer_parity.py" check --tokenizer "fx/$1" --jsonl "$2" \
    --prefix "$3_text_document" "${@:4}"; then
    ok "$1 ids equal tokenizers' on $(basename "$2")"
  else
    bad "$1 ids differ from tokenizers' on $(basename "$2")"
  fi
}

# expect_refusal CASE NEEDLE: preprocess_data with bad/CASE.json fails naming NEEDLE and the file, and
# leaves no output (hard.jsonl is the input).
expect_refusal() {
  if "$GPTRAIN_BIN/preprocess_data" --input hard.jsonl --output-prefix refused --tokenizer-type HuggingFaceTokenizer \
    --tokenizer-model "bad/$1.json" > /dev/null 2> err.txt; then
    bad "$1: accepted"
  elif grep -qF -- "$2" err.txt && grep -qF "bad/$1.json" err.txt; then
    ok "$1 refused: $(head -c 140 err.txt)"
  else
    bad "$1: error without '$2' and the file name: $(cat err.txt)"
  fi
  [ ! -e refused_text_document.bin ] || bad "$1: output left behind"
}
