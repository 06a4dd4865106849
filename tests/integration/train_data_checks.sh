#!/usr/bin/env bash
# What a training run says about data that does not fit its flags: a token id past the model's
# vocabulary in one dataset of a blend stops the run naming that dataset's file, split and sample (it named
# only a micro-batch row before); evaluation asked for with a --split that leaves the validation split empty
# says that no validation loss will be computed (it was skipped without a word); a vocabulary too large
# for int32 token ids is refused by name; --data-args-path and --per-split-data-args-path read the lists
# of --data-path and the per-split paths from files (the same losses as the flags), and a broken file is
# named with its line. ~6 s on 2 cores.
set -euo pipefail
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# Two pre-tokenized datasets: ids below 100, and one with ids up to 180 (made for a larger vocabulary).
python3 - <<'PY'
import json, random
r = random.Random(5)
for name, top in (("small", 99), ("large", 180)):
    with open(name + ".jsonl", "w") as f:
        for _ in range(60):
            f.write(json.dumps({"text": " ".join(str(r.randint(0, top)) for _ in range(30))}) + "\n")
PY
for name in small large; do
  "$GPTRAIN_BIN/preprocess_data" --input $name.jsonl --output-prefix $name --tokenizer-type NullTokenizer \
    --vocab-size 200 --log-interval 0 > /dev/null
done
run=("$GPTRAIN_BIN/pretrain_gpt" --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 16
     --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 4 --train-iters 4 --lr 1e-3
     --log-interval 1 --tokenizer-type NullTokenizer --vocab-size 100)

if "${run[@]}" --data-path 0.5 small_text_document 0.5 large_text_document --split 90,10,0 > blend.out 2> blend.err; then
  bad "a dataset with ids past the vocabulary trained"
elif grep -q "large_text_document (train split) sample [0-9]* .*outside the model's vocabulary \[0, 101)" blend.err; then
  ok "the id past the vocabulary names its dataset: $(tail -1 blend.err)"
else
  bad "the error does not name the dataset: $(cat blend.err)"
fi

"${run[@]}" --data-path small_text_document --split 100,0,0 --eval-interval 2 --eval-iters 2 > nosplit.out 2> nosplit.err
if grep -q -- "--split 100,0,0 gives the validation split no documents: no validation loss" nosplit.err; then
  ok "an empty validation split with --eval-iters is named"
else
  bad "no word that evaluation is skipped: $(cat nosplit.err)"
fi
"${run[@]}" --data-path small_text_document --split 90,10,0 --eval-interval 2 --eval-iters 2 > split.out 2> split.err
grep -q "validation loss at iteration 2" split.out && ! grep -q "no validation loss" split.err &&
  ok "a validation split evaluates without the warning" || bad "with a validation split: $(cat split.out split.err)"

# The data lists from files: the same training as the flags they stand for.
losses() { grep -o "lm loss[ value]*: [0-9.E+-]*" "$1"; }
printf '0.5 small_text_document\n0.5\tsmall_text_document\n' > list.txt
"${run[@]}" --data-path 0.5 small_text_document 0.5 small_text_document --split 90,10,0 > flags.out 2>&1
if "${run[@]}" --data-args-path list.txt --split 90,10,0 > file.out 2> file.err &&
   [ -n "$(losses flags.out)" ] && [ "$(losses flags.out)" = "$(losses file.out)" ]; then
  ok "--data-args-path trains as --data-path"
else
  bad "--data-args-path: $(cat file.err) $(losses file.out)"
fi
cat > split.json <<'JSON'
{"train": [0.5, "small_text_document", "0.5", "small_text_document"],
 "valid": "small_text_document", "test": null}
JSON
"${run[@]}" --train-data-path 0.5 small_text_document 0.5 small_text_document --valid-data-path small_text_document \
  --eval-interval 2 --eval-iters 1 > pflags.out 2>&1
if "${run[@]}" --per-split-data-args-path split.json --eval-interval 2 --eval-iters 1 > pfile.out 2> pfile.err &&
   grep -q "validation loss at iteration 2" pfile.out &&
   [ "$(losses pflags.out)" = "$(losses pfile.out)" ]; then
  ok "--per-split-data-args-path trains and validates as the per-split flags"
else
  bad "--per-split-data-args-path: $(cat pfile.err) $(losses pfile.out)"
fi
printf '{"train": ["small_text_document"],\n "valid": [small_text_document], "test": null}\n' > broken.json
if "${run[@]}" --per-split-data-args-path broken.json > broken.out 2> broken.err; then
  bad "a broken JSON file trained"
else
  grep -q -- "--per-split-data-args-path broken.json: not valid JSON at line 2" broken.err &&
    ok "broken JSON is named with its line" || bad "broken JSON: $(cat broken.err)"
fi
printf '{"train": ["small_text_document"], "valid": null}\n' > nokey.json
! "${run[@]}" --per-split-data-args-path nokey.json > nokey.out 2> nokey.err &&
  grep -q -- 'nokey.json: no "test" key' nokey.err && ok "a missing split key is named" ||
  bad "missing key: $(cat nokey.err)"
printf '0.5 small_text_document\n0x5 small_text_document\n' > badweight.txt
! "${run[@]}" --data-args-path badweight.txt --split 90,10,0 > bw.out 2> bw.err &&
  grep -q -- "--data-args-path badweight.txt line 2: '0x5' (before small_text_document) is not a number" bw.err &&
  ok "a bad weight in the list file is named with its line" || bad "bad weight: $(cat bw.err)"
! "${run[@]}" --data-args-path missing.txt --split 90,10,0 > miss.out 2> miss.err &&
  grep -q -- "--data-args-path missing.txt: cannot open" miss.err && ok "a missing list file is named" ||
  bad "missing file: $(cat miss.err)"

# A vocabulary padded past the int32 ids overflowed into "GptStage: the StageConfig was not finalized".
if "${run[@]}" --mock-data --tokenizer-type GPT2BPETokenizer --vocab-size 2147483647 > big.out 2> big.err; then
  bad "a vocabulary of 2^31-1 trained"
elif ! "${run[@]}" --mock-data --vocab-size 2147483647 > null.out 2> null.err &&
     ! grep -q "the end-of-document id is N) do not fit int32" null.err; then
  bad "NullTokenizer with 2^31-1 ids: $(cat null.err)"
else
  grep -q "int32 token ids" big.err && ok "a vocabulary past int32 is named" ||
    bad "vocabulary 2^31-1: $(cat big.err)"
fi

[ "$fails" = 0 ] || { echo "$fails check(s) failed"; exit 1; }
