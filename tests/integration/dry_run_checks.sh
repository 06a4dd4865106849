#!/usr/bin/env bash
# pretrain_gpt --dry-run makes the checks a run makes before step 1 (besides allocating): the planned
# sample counts of every dataset equal what the real run builds, and each bad input a run would stop on
# (missing or truncated files, empty splits, a --load checkpoint of another shape, another vocabulary or
# without optimizer state, an unwritable --save) stops the dry run too, with the same message, and writes nothing.
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_corpora
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
"$GPTRAIN_BIN/preprocess_data" --input "$GPTRAIN_SHARED/data/corpora/tinyshakespeare_chunks4k.jsonl" \
  --output-prefix sh --tokenizer-type GPT2BPETokenizer --append-eod >/dev/null 2>&1
cp sh_text_document.idx other_text_document.idx && cp sh_text_document.bin other_text_document.bin
M=(--device cpu --num-layers 2 --hidden-size 32 --num-attention-heads 2 --seq-length 32 --max-position-embeddings 32
  --micro-batch-size 2 --global-batch-size 4 --train-iters 5 --eval-interval 2 --eval-iters 2 --lr 1e-3
  --log-interval 1 --split 90,10,0)
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. Planned counts == built counts, for one dataset and for a weighted blend; nothing written.
for data in "sh_text_document" "0.3 sh_text_document 0.7 other_text_document"; do
  read -ra D <<<"$data"
  "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --data-path "${D[@]}" --data-cache-path cache-dry --dry-run >dry.txt 2>&1 ||
    { cat dry.txt; bad "dry run of $data"; continue; }
  [ ! -e cache-dry ] || bad "--dry-run wrote the index cache"
  "$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --data-path "${D[@]}" --data-cache-path cache-run >run.txt 2>&1 ||
    { cat run.txt; bad "run of $data"; continue; }
  planned=$(grep -oE "^(GPTDataset [^:]*|[a-z]+ blend of [0-9]+ datasets): .* [0-9]+ samples" dry.txt | sed -E 's/:.* ([0-9]+) samples/ \1/')
  built=$(grep -oE "^(GPTDataset [^:]*: sequences.* [0-9]+ samples; index built|GPTDataset [^:]*: [0-9]+ samples, index mapped)" run.txt |
    sed -E 's/: sequences.* ([0-9]+) samples; index built/ \1/; s/: ([0-9]+) samples, index mapped/ \1/')
  want=$(echo "$planned" | grep "^GPTDataset" || true)
  [ -n "$want" ] && [ "$want" = "$built" ] || { bad "planned != built for '$data'"; echo "planned:"; echo "$planned"; echo "built:"; echo "$built"; }
  echo "ok   planned sample counts equal the run's for '$data' ($(echo "$want" | wc -l) datasets)"
done

# 2. What stops a run stops the dry run, with the same first error line.
same_error() {  # what, extra flags...
  local what=$1; shift
  local r d
  r=$("$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" "$@" 2>&1 | grep -m1 "error:" || true)
  d=$("$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" "$@" --dry-run 2>&1 | grep -m1 "error:" || true)
  if [ -z "$d" ]; then bad "$what: --dry-run accepted it"; elif [ "$r" != "$d" ]; then
    bad "$what: different errors"; echo "  run: $r"; echo "  dry: $d"; else echo "ok   $what: $d"; fi
}
same_error "missing dataset" --data-path nothere_text_document
head -c 100 sh_text_document.idx >trunc_text_document.idx && cp sh_text_document.bin trunc_text_document.bin
same_error "truncated .idx" --data-path trunc_text_document
same_error "empty valid split asked for samples" --data-path sh_text_document --split 99.9,0.1,0
same_error "blend weight that is not a number" --data-path 0.5 sh_text_document x other_text_document
"$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --data-path sh_text_document --save ck --save-interval 5 >/dev/null 2>&1
"$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --data-path sh_text_document --save ck-noopt --save-interval 5 --no-save-optim \
  >/dev/null 2>&1
same_error "--load of another hidden size" --data-path sh_text_document --load ck --hidden-size 64
same_error "--load of fewer layers" --data-path sh_text_document --load ck --num-layers 3
same_error "--load without optimizer state" --data-path sh_text_document --load ck-noopt
# A checkpoint of another vocabulary (GPT-2's 50257 tokens, padded 50304) is refused rather than cut to the
# run's 50000 rows (which its padding of 50048 would take silently), with --finetune too.
same_error "--load of another vocabulary" --mock-data --vocab-size 50000 --load ck --finetune
grep -q "error: .*vocabulary of 50257 tokens (padded to 50304).*GPT2BPETokenizer.*50000 tokens (padded to 50048)" \
  <("$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --mock-data --vocab-size 50000 --load ck 2>&1) ||
  bad "the vocabulary error does not name both sizes and the tokenizer"
# 50257 tokens into a run of 50300 (both pad to 50304) is another vocabulary too. A checkpoint whose vocabulary
# is its padded size (a Hugging Face config's, as Pythia's 50304) loads into a smaller tokenizer with a warning.
same_error "--load of a larger vocabulary of the same padding" --mock-data --vocab-size 50300 --load ck --finetune
"$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --mock-data --vocab-size 256 --train-iters 1 --save ck-padded --save-interval 1 \
  >/dev/null 2>&1
"$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --mock-data --vocab-size 200 --load ck-padded --finetune --dry-run >pad.txt 2>&1 ||
  { cat pad.txt; bad "--load of a checkpoint whose vocabulary is its padded size"; }
grep -q "warning: .*vocabulary is its padded size, 256 rows; this run's tokenizer has 200 tokens (padded to 256)" \
  pad.txt || bad "no warning naming both vocabularies: $(cat pad.txt)"
same_error "--save that cannot be written" --data-path sh_text_document --save /proc/gptrain-ckpt --save-interval 5
"$GPTRAIN_BIN/pretrain_gpt" "${M[@]}" --data-path sh_text_document --load ck --dry-run >ok.txt 2>&1 ||
  { cat ok.txt; bad "--dry-run --load of a matching checkpoint"; }
grep -q "iteration 5 fits this model" ok.txt || bad "no --load line in the dry run"
[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "dry-run checks: all ok"
