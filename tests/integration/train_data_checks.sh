#!/usr/bin/env bash
# What a training run says about data that does not fit its flags: a token id past the model's
# vocabulary in one dataset of a blend stops the run naming that dataset's file, split and sample (it named
# only a micro-batch row before); evaluation asked for with a --split that leaves the validation split empty
# says that no validation loss will be computed (it was skipped without a word); a vocabulary too large
# for int32 token ids is refused by name. ~4 s on 2 cores.
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
