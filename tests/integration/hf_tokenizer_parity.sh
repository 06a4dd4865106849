#!/usr/bin/env bash
# --tokenizer-type HuggingFaceTokenizer: byte-level BPE tokenizer.json files trained here with Hugging
# Face `tokenizers` on the shared corpora (NeoX-like, Llama-3-like with its BOS template, Qwen2-like,
# GPT-2 with a prefix space; hf_tokenizer_parity.py says what each holds). preprocess_data's ids equal
# tokenizers' encode(text) on the three corpora and on hard strings (Llama-3 regex corners, added tokens,
# scripts, emoji, digit/white-space runs, control characters, a Unicode sweep); output bytes are the
# same for --workers 1 and 4; inspect_data decodes documents as tokenizers' decode does; components
# gptrain does not implement are refused by name; pretrain_gpt trains 20 iterations on the Llama-3-like
# data with the vocabulary padded from the tokenizer's size and records the tokenizer in the checkpoint;
# convert_to_hf writes tokenizer files that AutoTokenizer loads with the same ids.
# Trains the fixtures, then compares; ~1.5 min on 2 cores (2-3.5 min on a loaded machine).
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_corpora
need_python tokenizers numpy
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
export RAYON_NUM_THREADS=2
script=$GPTRAIN_SRC/tests/python/hf_tokenizer_parity.py
corpora=$GPTRAIN_SHARED/data/corpora
source "$GPTRAIN_SRC/tests/integration/tokenizer_checks.bash"

"$py" "$script" train fx "$corpora"/*.jsonl
"$py" "$script" hard hard.jsonl
cat "$corpora"/*.jsonl > corpora.jsonl

for f in neox llama3 qwen2 prefix; do
  tokenize $f hard.jsonl hard_$f --workers 2
  parity $f hard.jsonl hard_$f
done
tokenize llama3 hard.jsonl hard_llama3_eod --workers 2 --append-eod
parity llama3 hard.jsonl hard_llama3_eod --append-eod

for f in neox llama3; do
  tokenize $f corpora.jsonl c1_$f --workers 1 --append-eod
  tokenize $f corpora.jsonl c4_$f --workers 4 --append-eod
  if cmp -s c1_${f}_text_document.bin c4_${f}_text_document.bin && cmp -s c1_${f}_text_document.idx c4_${f}_text_document.idx; then
    ok "$f: --workers 1 and 4 write the same bytes"
  else
    bad "$f: --workers 1 and 4 differ"
  fi
  parity $f corpora.jsonl c4_$f --append-eod
done

# decode: inspect_data doc == tokenizers' decode(ids, skip_special_tokens=False) (plus the newline it adds).
for i in 0 5 21 24 27 40; do
  "$GPTRAIN_BIN/inspect_data" doc --data-path hard_llama3_text_document --index $i --tokenizer-type HuggingFaceTokenizer \
    --tokenizer-model fx/llama3 > dec_$i.txt
  "$py" - fx/llama3/tokenizer.json hard.jsonl $i dec_$i.txt <<'PY' && ok "decode of document $i" || bad "decode of document $i"
import json, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
text = [json.loads(l)["text"] for l in open(sys.argv[2], encoding="utf-8")][int(sys.argv[3])]
want = tok.decode(tok.encode(text).ids, skip_special_tokens=False).encode()
got = open(sys.argv[4], "rb").read()
if not want.endswith(b"\n"):
    want += b"\n"
sys.exit(0 if got == want else 1)
PY
done

# Components gptrain does not implement: refused, naming the component and the file.
mkdir bad
"$py" "$script" bad bad fx/llama3/tokenizer.json > /dev/null
expect_refusal nfkd "normalizer \"NFKD\""
expect_refusal unknown_regex "Split regex"
expect_refusal removed "behavior \"Removed\""
expect_refusal wordpiece "model type \"WordPiece\""
expect_refusal byte_fallback "byte_fallback"
expect_refusal lstrip "lstrip"
expect_refusal bert_post "BertProcessing"
expect_refusal merge_unknown "not in model.vocab"
expect_refusal missing_byte "byte 0x00"
if "$GPTRAIN_BIN/preprocess_data" --input hard.jsonl --output-prefix refused --tokenizer-type HuggingFaceTokenizer \
  > /dev/null 2> err.txt; then bad "no --tokenizer-model: accepted"; else
  grep -qF -- "needs --tokenizer-model" err.txt && ok "no --tokenizer-model refused" || bad "no --tokenizer-model: $(cat err.txt)"
fi

# pretrain_gpt on the Llama-3-like data: vocabulary 3000 padded to 3072 (128), tokenizer in the checkpoint.
"$GPTRAIN_BIN/pretrain_gpt" --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 \
  --max-position-embeddings 32 --micro-batch-size 4 --global-batch-size 4 --train-iters 20 --lr 5e-3 \
  --data-path c4_llama3_text_document --split 98,2,0 --eval-interval 20 --eval-iters 2 --log-interval 10 \
  --tokenizer-type HuggingFaceTokenizer --tokenizer-model fx/llama3 --data-cache-path cache \
  --save ckpt --save-interval 20 > train.log 2>&1 || { cat train.log; bad "pretrain_gpt failed"; }
grep -q "padded vocabulary 3072" train.log && ok "padded vocabulary 3072 from the tokenizer's 3000" ||
  bad "no 'padded vocabulary 3072' in: $(grep -m1 'padded vocabulary' train.log)"
"$py" - ckpt <<'PY' && ok "checkpoint records the tokenizer" || bad "checkpoint metadata lacks the tokenizer"
import glob, json, sys
meta = json.load(open(sorted(glob.glob(sys.argv[1] + "/iter_*/metadata.json"))[-1]))
assert meta["model"]["tokenizer_type"] == "HuggingFaceTokenizer", meta["model"]
assert meta["args"]["tokenizer_model"] == "fx/llama3", meta["args"].get("tokenizer_model")
assert meta["model"]["vocab_size"] == 3000 or meta["args"].get("padded_vocab_size", 3072) == 3072
PY

# convert_to_hf writes the tokenizer (the directory's files; tokenizer.json alone gets a tokenizer_config.json)
# so that AutoTokenizer gives tokenizers' ids, and config.json's bos/eos ids are the tokenizer's.
if "$py" -c "import transformers" 2> /dev/null; then
  "$GPTRAIN_BIN/convert_to_hf" --load ckpt --output hf_llama3 > /dev/null 2>&1 || bad "convert_to_hf failed"
  # A checkpoint trained with a bare tokenizer.json (here the NeoX-like one, which has no tokenizer_config.json).
  "$GPTRAIN_BIN/preprocess_data" --input "$corpora/tinyshakespeare_speeches.jsonl" --output-prefix neox_speeches \
    --tokenizer-type HuggingFaceTokenizer --tokenizer-model fx/neox/tokenizer.json --append-eod --log-interval 0 > /dev/null
  "$GPTRAIN_BIN/pretrain_gpt" --num-layers 1 --hidden-size 32 --num-attention-heads 4 --seq-length 16 \
    --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 2 --train-iters 2 --lr 1e-3 \
    --data-path neox_speeches_text_document --split 100,0,0 --eval-iters 0 --data-cache-path cache \
    --tokenizer-type HuggingFaceTokenizer --tokenizer-model fx/neox/tokenizer.json --save ckpt_neox \
    --save-interval 2 > train_neox.log 2>&1 || { cat train_neox.log; bad "pretrain_gpt (neox) failed"; }
  "$GPTRAIN_BIN/convert_to_hf" --load ckpt_neox --output hf_neox > /dev/null 2>&1 || bad "convert_to_hf (neox) failed"
  "$py" - hard.jsonl <<'PY' && ok "AutoTokenizer on convert_to_hf's output gives tokenizers' ids" || bad "AutoTokenizer ids differ"
import json, sys
from tokenizers import Tokenizer
from transformers import AutoTokenizer
texts = [json.loads(l)["text"] for l in open(sys.argv[1], encoding="utf-8")][:60]
for out, fixture, bos, eos in (("hf_llama3", "fx/llama3", "<|begin_of_text|>", "<|end_of_text|>"),
                               ("hf_neox", "fx/neox", "<|endoftext|>", "<|endoftext|>")):
    ref = Tokenizer.from_file(fixture + "/tokenizer.json")
    auto = AutoTokenizer.from_pretrained(out)
    for t in texts:
        assert auto(t)["input_ids"] == ref.encode(t).ids, (out, t[:80])
    cfg = json.load(open(out + "/config.json"))
    assert cfg["eos_token_id"] == ref.token_to_id(eos), (out, cfg["eos_token_id"])
    assert cfg["bos_token_id"] == ref.token_to_id(bos), (out, cfg["bos_token_id"])
    assert auto.eos_token == eos, (out, auto.eos_token)
    print(f"{out}: {type(auto).__name__}, {len(texts)} hard strings, eos {eos} bos {bos}")
PY
else
  echo "note: no transformers in GPTRAIN_PYTHON; convert_to_hf/AutoTokenizer check skipped"
fi

[ "$fails" -eq 0 ] || { echo "hf_tokenizer_parity: $fails failures"; exit 1; }
echo "hf_tokenizer_parity: OK"
