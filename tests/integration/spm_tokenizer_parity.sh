#!/usr/bin/env bash
# --tokenizer-type SentencePieceTokenizer | GPTSentencePieceTokenizer | Llama2Tokenizer: SentencePiece
# models trained here with PyPI `sentencepiece` on the shared corpora (a Llama-2-style BPE with byte
# fallback, an NFKC BPE with a pad and a user-defined piece, a unigram model without byte fallback;
# spm_tokenizer_parity.py says what each holds). preprocess_data's ids (the llama model through the
# native BPE encoder, required) equal Megatron's tokenize() over the Python library for every type and model, on hard strings (scripts, emoji, digit/white-space runs,
# control characters, special-token texts, a Unicode sweep) and on the three corpora; output bytes are
# the same for --workers 1 and 3; inspect_data decodes as Megatron's detokenize; bad models and flags are
# refused; pretrain_gpt trains a tiny Llama-shaped model 20 iterations on Llama2Tokenizer data with the
# vocabulary padded from the tokenizer and records it; convert_to_hf's output loads as LlamaForCausalLM
# with LlamaTokenizer and LlamaTokenizerFast giving the same ids and the loss of gptrain's logits;
# generate's greedy text equals transformers'; convert_from_hf maps it back to Llama2Tokenizer. ~2 min.
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_corpora
need_python sentencepiece numpy
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
script=$GPTRAIN_SRC/tests/python/spm_tokenizer_parity.py
corpora=$GPTRAIN_SHARED/data/corpora
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
fails=0
ok() { echo "ok: $*"; }
bad() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

"$py" "$script" train fx "$corpora"/python311_docs.jsonl "$corpora"/tinyshakespeare_chunks4k.jsonl \
  "$corpora"/tinyshakespeare_speeches.jsonl
"$py" "$script" hard hard.jsonl
cat "$corpora"/*.jsonl > corpora.jsonl

# The llama model must take the native BPE encoder (GPTRAIN_SPM_ENCODER=native refuses it otherwise), so
# its parity checks test that encoder, not the library; the others go through the library.
tokenize() {  # tokenize TYPE MODEL JSONL PREFIX [flags]
  local type=$1 model=$2 jsonl=$3 prefix=$4 encoder=library
  shift 4
  [ "$model" != llama ] || encoder=native
  GPTRAIN_SPM_ENCODER=$encoder "$GPTRAIN_BIN/preprocess_data" --input "$jsonl" --output-prefix "$prefix" --tokenizer-type "$type" \
    --tokenizer-model "fx/$model.model" --log-interval 0 "$@" > /dev/null 2>&1
}
parity() {  # parity TYPE MODEL JSONL PREFIX [--append-eod]
  echo -n "$1 $2 $(basename "$3"): "
  if "$py" "$script" check --type "$1" --model "fx/$2.model" --jsonl "$3" --prefix "$4_text_document" "${@:5}"; then
    ok "$1 / $2: ids equal sentencepiece's on $(basename "$3")"
  else
    bad "$1 / $2: ids differ from sentencepiece's on $(basename "$3")"
  fi
}

for type in GPTSentencePieceTokenizer Llama2Tokenizer SentencePieceTokenizer; do
  for model in llama nfkc unigram; do
    tokenize $type $model hard.jsonl hard_${type}_$model --workers 2 --append-eod
    parity $type $model hard.jsonl hard_${type}_$model --append-eod
  done
done

for run in "Llama2Tokenizer llama" "SentencePieceTokenizer nfkc"; do
  set -- $run
  tokenize $1 $2 corpora.jsonl c1_$2 --workers 1 --append-eod
  tokenize $1 $2 corpora.jsonl c3_$2 --workers 3 --append-eod
  if cmp -s c1_$2_text_document.bin c3_$2_text_document.bin && cmp -s c1_$2_text_document.idx c3_$2_text_document.idx; then
    ok "$1 / $2: --workers 1 and 3 write the same bytes"
  else
    bad "$1 / $2: --workers 1 and 3 differ"
  fi
  parity $1 $2 corpora.jsonl c3_$2 --append-eod
done

# decode: inspect_data doc == Megatron's detokenize(ids) (plus the newline it adds); SentencePieceTokenizer
# puts its special tokens between spaces, the unigram model's unknown characters decode to " ⁇ ".
for type in Llama2Tokenizer SentencePieceTokenizer; do
  tokenize $type unigram hard.jsonl dec_$type --workers 2
  for i in 0 1 2 9 12 24 40 60; do
    "$GPTRAIN_BIN/inspect_data" doc --data-path dec_${type}_text_document --index $i --tokenizer-type $type \
      --tokenizer-model fx/unigram.model > dec.txt
    if "$py" "$script" decode --type $type --model fx/unigram.model --jsonl hard.jsonl --index $i --got dec.txt; then
      ok "$type decode of document $i"
    else
      bad "$type decode of document $i"
    fi
  done
done

expect_refusal() {  # expect_refusal WHAT NEEDLE preprocess_data-flags...
  local what=$1 needle=$2
  shift 2
  if "$GPTRAIN_BIN/preprocess_data" --input hard.jsonl --output-prefix refused "$@" > /dev/null 2> err.txt; then
    bad "$what: accepted"
  elif grep -qF -- "$needle" err.txt; then
    ok "$what refused: $(head -c 140 err.txt)"
  else
    bad "$what: error without '$needle': $(cat err.txt)"
  fi
  [ ! -e refused_text_document.bin ] || bad "$what: output left behind"
}
expect_refusal "no --tokenizer-model" "needs --tokenizer-model" --tokenizer-type Llama2Tokenizer
expect_refusal "a missing model" "fx/missing.model: no such file" --tokenizer-type GPTSentencePieceTokenizer \
  --tokenizer-model fx/missing.model
expect_refusal "a file that is not a model" "not a SentencePiece model" --tokenizer-type SentencePieceTokenizer \
  --tokenizer-model hard.jsonl
expect_refusal "a directory without tokenizer.model" "no tokenizer.model" --tokenizer-type Llama2Tokenizer \
  --tokenizer-model fx
expect_refusal "Llama2Tokenizer without a BOS piece" "no beginning-of-sentence piece" --tokenizer-type Llama2Tokenizer \
  --tokenizer-model fx/nobos.model
expect_refusal "--vocab-file with a SentencePiece type" "not used by GPTSentencePieceTokenizer" \
  --tokenizer-type GPTSentencePieceTokenizer --tokenizer-model fx/llama.model --vocab-file x.json --merge-file y.txt

# pretrain_gpt: a tiny Llama-shaped model on the Llama2Tokenizer data; vocabulary 3000 padded to 3072.
"$GPTRAIN_BIN/pretrain_gpt" --num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 \
  --max-position-embeddings 32 --micro-batch-size 4 --global-batch-size 4 --train-iters 20 --lr 5e-3 \
  --normalization RMSNorm --position-embedding-type rope --swiglu --ffn-hidden-size 96 --disable-bias-linear \
  --group-query-attention --num-query-groups 2 --untie-embeddings-and-output-weights \
  --data-path c3_llama_text_document --split 98,2,0 --eval-interval 20 --eval-iters 2 --log-interval 10 \
  --tokenizer-type Llama2Tokenizer --tokenizer-model fx/llama.model --data-cache-path cache \
  --save ckpt --save-interval 20 > train.log 2>&1 || { cat train.log; bad "pretrain_gpt failed"; }
grep -q "padded vocabulary 3072" train.log && ok "padded vocabulary 3072 from the tokenizer's 3000" ||
  bad "no 'padded vocabulary 3072' in: $(grep -m1 'padded vocabulary' train.log)"
"$py" - ckpt <<'PY' && ok "checkpoint records the tokenizer" || bad "checkpoint metadata lacks the tokenizer"
import glob, json, sys
meta = json.load(open(sorted(glob.glob(sys.argv[1] + "/iter_*/metadata.json"))[-1]))
assert meta["model"]["tokenizer_type"] == "Llama2Tokenizer", meta["model"]
assert meta["args"]["tokenizer_model"] == "fx/llama.model", meta["args"].get("tokenizer_model")
PY
# SentencePieceTokenizer's added tokens count: the nfkc model's 2000 pieces (<CLS> and <pad> among them)
# + <SEP> <EOD> <MASK> = 2003, padded to 2048 with --make-vocab-size-divisible-by 64.
"$GPTRAIN_BIN/pretrain_gpt" --num-layers 1 --hidden-size 32 --num-attention-heads 4 --seq-length 16 \
  --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 2 --train-iters 2 --lr 1e-3 \
  --data-path c3_nfkc_text_document --split 100,0,0 --eval-iters 0 --data-cache-path cache \
  --tokenizer-type SentencePieceTokenizer --tokenizer-model fx/nfkc.model --make-vocab-size-divisible-by 64 \
  > train_nfkc.log 2>&1 || { cat train_nfkc.log; bad "pretrain_gpt (SentencePieceTokenizer) failed"; }
grep -q "padded vocabulary 2048" train_nfkc.log && ok "SentencePieceTokenizer: vocabulary 2003 padded to 2048" ||
  bad "SentencePieceTokenizer: $(grep -m1 'padded vocabulary' train_nfkc.log)"

"$GPTRAIN_BIN/generate" --load ckpt --prompt "ROMEO:" --max-new-tokens 8 --temperature 0 \
  --tokenizer-type Llama2Tokenizer --tokenizer-model fx/llama.model > generated.txt 2> gen.err ||
  { cat gen.err; bad "generate failed"; }

if "$py" -c "import transformers, torch, safetensors" 2> /dev/null; then
  if "$GPTRAIN_BIN/convert_to_hf" --load ckpt --output hf > convert.log 2>&1; then
    ok "convert_to_hf wrote $(cd hf && echo *)"
  else
    cat convert.log
    bad "convert_to_hf failed"
  fi
  ! grep -q "LlamaTokenizerFast" convert.log || bad "convert_to_hf warned about the fast tokenizer for a Llama-style model"
  if "$py" "$script" hf --hf hf --model fx/llama.model --jsonl hard.jsonl --corpus corpora.jsonl \
    --prefix c3_llama_text_document --ckpt ckpt --bin "$GPTRAIN_BIN" --generated generated.txt 2> hf.err; then
    ok "transformers: LlamaForCausalLM, LlamaTokenizer(Fast) ids, loss and greedy text agree"
  else
    grep -v "Token indices sequence length" hf.err
    bad "transformers check"
  fi
  "$GPTRAIN_BIN/convert_from_hf" --load hf --save back > /dev/null 2>&1 || bad "convert_from_hf failed"
  "$py" - back "$PWD/hf/tokenizer.model" <<'PY' && ok "convert_from_hf records Llama2Tokenizer and tokenizer.model" || bad "convert_from_hf metadata"
import glob, json, sys
meta = json.load(open(sorted(glob.glob(sys.argv[1] + "/*/metadata.json"))[-1]))
assert meta["model"]["tokenizer_type"] == "Llama2Tokenizer", meta["model"]
assert meta["args"]["tokenizer_model"] == sys.argv[2], meta["args"].get("tokenizer_model")
PY
  # The NFKC model under SentencePieceTokenizer: the converter warns that the fast tokenizer would differ,
  # and LlamaTokenizer (slow) with the added tokens in tokenizer_config.json gives Megatron's ids, but for
  # "<unk>" in text (a special token to transformers, text to Megatron).
  "$GPTRAIN_BIN/pretrain_gpt" --num-layers 1 --hidden-size 32 --num-attention-heads 4 --seq-length 16 \
    --max-position-embeddings 16 --micro-batch-size 2 --global-batch-size 2 --train-iters 2 --lr 1e-3 \
    --data-path c3_nfkc_text_document --split 100,0,0 --eval-iters 0 --data-cache-path cache \
    --tokenizer-type SentencePieceTokenizer --tokenizer-model fx/nfkc.model --save ckpt_nfkc --save-interval 2 \
    > train_nfkc_save.log 2>&1 || bad "pretrain_gpt (SentencePieceTokenizer, --save) failed"
  "$GPTRAIN_BIN/convert_to_hf" --load ckpt_nfkc --output hf_nfkc > convert_nfkc.log 2>&1 || bad "convert_to_hf (nfkc) failed"
  grep -q "LlamaTokenizerFast.*removes extra white space; it normalizes (NFKC)" convert_nfkc.log &&
    ok "convert_to_hf warns about the fast tokenizer for an NFKC model" || bad "no fast-tokenizer warning: $(cat convert_nfkc.log)"
  "$py" - "$GPTRAIN_SRC/tests/python" hf_nfkc fx/nfkc.model hard.jsonl <<'PY' 2> /dev/null && ok "LlamaTokenizer (slow), NFKC model: SentencePieceTokenizer's ids and <EOD>" || bad "LlamaTokenizer on the NFKC model"
import json, sys
sys.path.insert(0, sys.argv[1])
from spm_tokenizer_parity import Megatron
from transformers import LlamaTokenizer
ref = Megatron(sys.argv[3], "SentencePieceTokenizer")
tok = LlamaTokenizer.from_pretrained(sys.argv[2])
texts = [json.loads(l)["text"] for l in open(sys.argv[4], encoding="utf-8")]
for t in [t for t in texts if "<unk>" not in t]:
    assert tok(t).input_ids == ref.tokenize(t), t[:80]
assert tok.eos_token == "<EOD>" and tok.eos_token_id == ref.eod, (tok.eos_token, tok.eos_token_id)
cfg = json.load(open(sys.argv[2] + "/config.json"))
assert cfg["eos_token_id"] == ref.eod, cfg
PY
  "$GPTRAIN_BIN/convert_from_hf" --load hf_nfkc --save back_nfkc > /dev/null 2>&1 || bad "convert_from_hf (nfkc) failed"
  "$py" - back_nfkc <<'PY' && ok "convert_from_hf maps convert_to_hf's SentencePieceTokenizer files back to it" || bad "convert_from_hf (nfkc) metadata"
import glob, json, sys
meta = json.load(open(sorted(glob.glob(sys.argv[1] + "/*/metadata.json"))[-1]))
assert meta["model"]["tokenizer_type"] == "SentencePieceTokenizer", meta["model"]
PY
else
  echo "note: no transformers in GPTRAIN_PYTHON; convert_to_hf/transformers checks skipped"
fi

[ "$fails" -eq 0 ] || { echo "spm_tokenizer_parity: $fails failures"; exit 1; }
echo "spm_tokenizer_parity: OK"
