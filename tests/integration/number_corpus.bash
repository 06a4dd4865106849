# Sourced by tests that need a small real dataset without a tokenizer file: number_corpus PREFIX writes
# PREFIX_text_document.{bin,idx} from 40 documents of 10-40 random numbers below 96 (one id each with
# --tokenizer-type NullTokenizer --vocab-size 96), the same documents on every call.
number_corpus() {
  python3 - "$1.jsonl" <<'PY'
import json, random, sys
r = random.Random(3)
with open(sys.argv[1], "w") as f:
    for _ in range(40):
        f.write(json.dumps({"text": " ".join(str(r.randint(0, 95)) for _ in range(r.randint(10, 40)))}) + "\n")
PY
  "$GPTRAIN_BIN/preprocess_data" --input "$1.jsonl" --output-prefix "$1" --tokenizer-type NullTokenizer \
    --vocab-size 96 --log-interval 0 > /dev/null 2>&1
}
