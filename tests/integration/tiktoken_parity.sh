#!/usr/bin/env bash
# --tokenizer-type TikTokenizer against PyPI tiktoken, constructed offline from the same ranks, pattern
# and special tokens as Megatron's TikTokenTokenizer (tests/python/tiktoken_parity.py): vocabularies
# trained here with `tokenizers` on the shared corpora, written as Megatron's JSON and as a tiktoken BPE
# file. preprocess_data's ids equal tiktoken's encode(text, allowed_special="all") for v1 and v2 on hard
# strings (with a vocabulary of every piece, which makes any split difference visible, and with trained
# ones), on the three corpora with --append-eod for --workers 1 and 4 (same bytes), with custom special
# tokens and a cut vocabulary; inspect_data decodes as tiktoken does; bad files and flags are refused by
# name; pretrain_gpt trains on the data with the vocabulary from --vocab-size, and generate / inspect_data
# --load without tokenizer flags take the checkpoint's tokenizer; convert_to_hf's tokenizer.json gives tiktoken's
# ids with transformers' AutoTokenizer and gptrain's HuggingFaceTokenizer, and the model's loss equals
# gptrain's. ~2.5 min on the 2-core machine (loaded).
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_corpora
need_python tokenizers tiktoken regex numpy
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
export RAYON_NUM_THREADS=2
script=$GPTRAIN_SRC/tests/python/tiktoken_parity.py
corpora=$GPTRAIN_SHARED/data/corpora
source "$GPTRAIN_SRC/tests/integration/tokenizer_checks.bash"

"$py" "$script" train fx "$corpora"/*.jsonl
"$py" "$script" hard hard.jsonl
npieces=$("$py" "$script" pieces fx/pieces.json hard.jsonl)
cat "$corpora"/*.jsonl > corpora.jsonl

# case NAME JSONL VOCAB PATTERN VOCAB_SIZE NUM_SPECIAL [SPECIALS...] [-- extra preprocess_data flags]
case_() {
  local name=$1 jsonl=$2 vocab=$3 pattern=$4 vsize=$5 nspecial=$6
  shift 6
  local specials=() extra=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do specials+=("$1"); shift; done
  [ $# -gt 0 ] && { shift; extra=("$@"); }
  local sflags=() eod=()
  [ ${#specials[@]} -gt 0 ] && sflags=(--tokenizer-special-tokens "${specials[@]}")
  printf '%s\n' "${extra[@]}" | grep -qx -- --append-eod && eod=(--append-eod)
  if ! "$GPTRAIN_BIN/preprocess_data" --input "$jsonl" --output-prefix "$name" --tokenizer-type TikTokenizer \
    --tokenizer-model "$vocab" --tiktoken-pattern "$pattern" --vocab-size "$vsize" \
    --tiktoken-num-special-tokens "$nspecial" "${sflags[@]}" --log-interval 0 "${extra[@]}" > /dev/null 2> err.txt; then
    bad "$name: preprocess_data failed: $(cat err.txt)"
    return
  fi
  echo -n "$name: "
  if "$py" "$script" check --vocab "$vocab" --pattern "$pattern" --vocab-size "$vsize" --num-special "$nspecial" \
    ${specials[@]+--special "${specials[@]}"} --jsonl "$jsonl" --prefix "${name}_text_document" "${eod[@]}"; then
    ok "$name ids equal tiktoken's"
  else
    bad "$name ids differ from tiktoken's"
  fi
}

for p in v1 v2; do
  case_ pieces_$p hard.jsonl fx/pieces.json $p $((npieces + 1000)) 1000 -- --workers 2
  case_ json_$p hard.jsonl fx/vocab.json $p 4000 1000 -- --workers 2
  case_ cross_$p hard.jsonl fx/cross.json $p 4000 1000 -- --workers 2
done
cmp -s pieces_v1_text_document.bin pieces_v2_text_document.bin && bad "v1 and v2 gave the same ids on the hard strings"
# tiktoken's file format (bytes not in byte order, lines shuffled), a cut vocabulary, custom special tokens.
case_ tiktoken_file hard.jsonl fx/vocab.tiktoken v1 2020 20 '<unk>' '<s>' '</s>' '<mask>' '<pad>' '<cls>' '<sep>' \
  '<|im_start|>' '<|im_end|>' -- --workers 2 --append-eod
case_ c1 corpora.jsonl fx/vocab.json v2 4000 1000 -- --workers 1 --append-eod
case_ c4 corpora.jsonl fx/vocab.json v2 4000 1000 -- --workers 4 --append-eod
if cmp -s c1_text_document.bin c4_text_document.bin && cmp -s c1_text_document.idx c4_text_document.idx; then
  ok "--workers 1 and 4 write the same bytes"
else
  bad "--workers 1 and 4 differ"
fi

# decode: inspect_data doc == tiktoken's decode_bytes (plus the newline inspect_data adds).
tik=(--tokenizer-type TikTokenizer --tokenizer-model fx/vocab.json --tiktoken-pattern v2 --vocab-size 4000)
for i in 0 14 16 20 60; do
  "$GPTRAIN_BIN/inspect_data" doc --data-path json_v2_text_document --index $i "${tik[@]}" > dec_$i.txt
  "$py" - "$script" hard.jsonl $i dec_$i.txt <<'PY' && ok "decode of document $i" || bad "decode of document $i"
import argparse, importlib.util, json, sys
spec = importlib.util.spec_from_file_location("tp", sys.argv[1]); tp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tp)
enc, _ = tp.reference(argparse.Namespace(vocab="fx/vocab.json", pattern="v2", vocab_size=4000, num_special=1000,
                                         special=None))
text = [json.loads(l)["text"] for l in open(sys.argv[2], encoding="utf-8")][int(sys.argv[3])]
want = enc.decode_bytes(enc.encode(text, allowed_special="all"))
assert want == text.encode()
got = open(sys.argv[4], "rb").read()
if not want.endswith(b"\n"):
    want += b"\n"
sys.exit(0 if got == want else 1)
PY
done

# Refusals: a clear message naming the flag or file, and no output left behind.
printf '[{"rank": 0, "token_bytes": "AQ==", "token_str": "x"}]' > bad_order.json
printf '[{"rank": 0, "token_bytes": "AA=="}]' > bad_keys.json
printf 'AA== 0\n!!! 1\n' > bad_line.tiktoken
printf 'AA== 0\nAQ== 0\n' > bad_repeat.tiktoken
expect_refusal() {  # expect_refusal NEEDLE FLAGS...
  local needle=$1
  shift
  if "$GPTRAIN_BIN/preprocess_data" --input hard.jsonl --output-prefix refused --tokenizer-type TikTokenizer "$@" \
    > /dev/null 2> err.txt; then
    bad "accepted: $*"
  elif grep -qF -- "$needle" err.txt; then
    ok "refused ($*): $(head -c 150 err.txt)"
  else
    bad "$*: error without '$needle': $(cat err.txt)"
  fi
  [ ! -e refused_text_document.bin ] || bad "$*: output left behind"
}
expect_refusal "needs --tokenizer-model"
expect_refusal "--tiktoken-pattern v3" --tokenizer-model fx/vocab.json --tiktoken-pattern v3 --vocab-size 4000
expect_refusal "<mask> is missing" --tokenizer-model fx/vocab.json --vocab-size 4000 --tokenizer-special-tokens '<unk>' '<s>' '</s>'
expect_refusal "listed twice" --tokenizer-model fx/vocab.json --vocab-size 4000 --tiktoken-special-tokens '<unk>' '<s>' '</s>' \
  '<mask>' '<pad>' '<cls>' '<sep>' '<s>'
expect_refusal "< --vocab-size 900" --tokenizer-model fx/vocab.json --vocab-size 900
expect_refusal "fewer than the 130072" --tokenizer-model fx/vocab.json
expect_refusal "bad_order.json: entry 0: the first 256" --tokenizer-model bad_order.json --vocab-size 1001
expect_refusal "bad_keys.json: entry 0: expected exactly the keys" --tokenizer-model bad_keys.json --vocab-size 1001
expect_refusal "bad_line.tiktoken:2: expected \"BASE64 RANK\"" --tokenizer-model bad_line.tiktoken --vocab-size 1002
expect_refusal "bad_repeat.tiktoken:2: rank 0 repeats line 1" --tokenizer-model bad_repeat.tiktoken --vocab-size 1002

# pretrain_gpt: the vocabulary is --vocab-size (4000, padded to 4096); the checkpoint records the flags.
"$GPTRAIN_BIN/pretrain_gpt" --num-layers 1 --hidden-size 32 --num-attention-heads 4 --seq-length 32 \
  --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 2 --train-iters 4 --lr 1e-3 \
  --data-path c4_text_document --split 100,0,0 --eval-iters 0 --data-cache-path cache "${tik[@]}" \
  --save ckpt --save-interval 4 > train.log 2>&1 || { cat train.log; bad "pretrain_gpt failed"; }
grep -q "padded vocabulary 4096" train.log && ok "padded vocabulary 4096 from --vocab-size 4000" ||
  bad "no 'padded vocabulary 4096' in: $(grep -m1 'padded vocabulary' train.log)"
"$py" - ckpt <<'PY' && ok "checkpoint records the TikTokenizer flags" || bad "checkpoint metadata lacks the TikTokenizer flags"
import glob, json, sys
meta = json.load(open(sorted(glob.glob(sys.argv[1] + "/iter_*/metadata.json"))[-1]))
a = meta["args"]
assert meta["model"]["tokenizer_type"] == "TikTokenizer", meta["model"]
assert (a["tokenizer_model"], a["tiktoken_pattern"], a["vocab_size"], a["tiktoken_num_special_tokens"]) == \
    ("fx/vocab.json", "v2", 4000, 1000), a
PY

# convert_to_hf writes Megatron's tiktoken layout as a byte-level BPE tokenizer.json: transformers'
# AutoTokenizer gives tiktoken's ids (hard strings and corpora), the model's loss on them equals gptrain's,
# and gptrain's HuggingFaceTokenizer on the written tokenizer.json gives preprocess_data's TikTokenizer bytes.
if "$py" -c "import transformers, torch, safetensors" 2> /dev/null; then
  "$GPTRAIN_BIN/convert_to_hf" --load ckpt --output hf_out > convert.log 2>&1 && [ -e hf_out/tokenizer.json ] &&
    ok "convert_to_hf wrote $(cd hf_out && echo *)" || { cat convert.log; bad "convert_to_hf failed"; }
  if "$py" "$script" hf --hf hf_out --vocab fx/vocab.json --pattern v2 --vocab-size 4000 --jsonl hard.jsonl \
    --corpus corpora.jsonl --prefix c4_text_document --ckpt ckpt --bin "$GPTRAIN_BIN" 2> hf.err; then
    ok "transformers: AutoTokenizer ids equal tiktoken's (v2), loss equals gptrain's"
  else
    grep -v "Token indices sequence length" hf.err
    bad "transformers check (v2)"
  fi
  grep -q "no merge of two lower ranks" convert.log && bad "trained ranks: convert_to_hf found tokens no merge builds"
  # The every-piece vocabulary: most tokens are no merge of two lower ranks (a warning counts them); each
  # piece is one token, which ignore_merges' whole-piece lookup finds, so the ids still equal tiktoken's.
  "$GPTRAIN_BIN/pretrain_gpt" --num-layers 1 --hidden-size 32 --num-attention-heads 4 --seq-length 32 \
    --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 2 --train-iters 1 --lr 1e-3 \
    --data-path pieces_v2_text_document --split 100,0,0 --eval-iters 0 --data-cache-path cache \
    --tokenizer-type TikTokenizer --tokenizer-model fx/pieces.json --tiktoken-pattern v2 \
    --vocab-size $((npieces + 1000)) --save ckpt_pieces --save-interval 1 > train_pieces.log 2>&1 ||
    { cat train_pieces.log; bad "pretrain_gpt (pieces) failed"; }
  "$GPTRAIN_BIN/convert_to_hf" --load ckpt_pieces --output hf_pieces > convert_pieces.log 2>&1 || bad "convert_to_hf (pieces) failed"
  grep -q "of the $npieces tiktoken ranks are no merge of two lower ranks" convert_pieces.log &&
    ok "convert_to_hf warns: $(grep -o '[0-9]* of the [0-9]* tiktoken ranks' convert_pieces.log) are no merge" ||
    bad "no unreachable-token warning: $(cat convert_pieces.log)"
  "$py" "$script" hf --hf hf_pieces --vocab fx/pieces.json --pattern v2 --vocab-size $((npieces + 1000)) \
    --jsonl hard.jsonl --corpus hard.jsonl 2> hf_pieces.err && ok "transformers: whole-piece ids (ignore_merges)" ||
    { grep -v "Token indices sequence length" hf_pieces.err; bad "transformers check (pieces)"; }
  # v1: a one-step run on the v1 data, its tokenizer only.
  "$GPTRAIN_BIN/pretrain_gpt" --num-layers 1 --hidden-size 32 --num-attention-heads 4 --seq-length 32 \
    --max-position-embeddings 32 --micro-batch-size 2 --global-batch-size 2 --train-iters 1 --lr 1e-3 \
    --data-path json_v1_text_document --split 100,0,0 --eval-iters 0 --data-cache-path cache \
    --tokenizer-type TikTokenizer --tokenizer-model fx/vocab.json --tiktoken-pattern v1 --vocab-size 4000 \
    --save ckpt_v1 --save-interval 1 > train_v1.log 2>&1 || { cat train_v1.log; bad "pretrain_gpt (v1) failed"; }
  "$GPTRAIN_BIN/convert_to_hf" --load ckpt_v1 --output hf_v1 > /dev/null 2>&1 || bad "convert_to_hf (v1) failed"
  if "$py" "$script" hf --hf hf_v1 --vocab fx/vocab.json --pattern v1 --vocab-size 4000 --jsonl hard.jsonl \
    --corpus corpora.jsonl 2> hf_v1.err; then
    ok "transformers: AutoTokenizer ids equal tiktoken's (v1)"
  else
    grep -v "Token indices sequence length" hf_v1.err
    bad "transformers check (v1)"
  fi
  # gptrain reads the written tokenizer.json back: the same bytes as TikTokenizer's.
  for p in v1 v2; do
    d=hf_out
    [ $p = v1 ] && d=hf_v1
    "$GPTRAIN_BIN/preprocess_data" --input hard.jsonl --output-prefix back_$p --tokenizer-type HuggingFaceTokenizer \
      --tokenizer-model $d/tokenizer.json --workers 2 --log-interval 0 > /dev/null 2> err.txt || bad "$(cat err.txt)"
    cmp -s back_${p}_text_document.bin json_${p}_text_document.bin &&
      ok "HuggingFaceTokenizer on the exported tokenizer.json ($p): TikTokenizer's ids on the hard strings" ||
      bad "HuggingFaceTokenizer on the exported tokenizer.json ($p) differs from TikTokenizer"
  done
  "$GPTRAIN_BIN/preprocess_data" --input corpora.jsonl --output-prefix back_c --tokenizer-type HuggingFaceTokenizer \
    --tokenizer-model hf_out --workers 2 --append-eod --log-interval 0 > /dev/null 2> err.txt || bad "$(cat err.txt)"
  cmp -s back_c_text_document.bin c4_text_document.bin && cmp -s back_c_text_document.idx c4_text_document.idx &&
    ok "HuggingFaceTokenizer on the exported directory (corpora, --append-eod): TikTokenizer's bytes" ||
    bad "HuggingFaceTokenizer on the exported directory differs from TikTokenizer on the corpora"
  "$GPTRAIN_BIN/convert_from_hf" --load hf_out --save back > /dev/null 2>&1 || bad "convert_from_hf failed"
  "$GPTRAIN_BIN/convert_to_hf" --load back --output hf_again > /dev/null 2>&1 || bad "convert_to_hf (round trip) failed"
  cmp -s hf_out/tokenizer.json hf_again/tokenizer.json && ok "convert_from_hf then convert_to_hf: the same tokenizer.json" ||
    bad "the round trip changed tokenizer.json"
else
  echo "SKIP part: transformers/torch/safetensors not importable (the convert_to_hf tokenizer checks)"
fi
# generate and inspect_data --load without --tokenizer-* flags use the checkpoint's tokenizer.
"$GPTRAIN_BIN/generate" --load ckpt --prompt "Hello world" --max-new-tokens 8 --seed 3 "${tik[@]}" > gen_flags.txt 2> /dev/null
"$GPTRAIN_BIN/generate" --load ckpt --prompt "Hello world" --max-new-tokens 8 --seed 3 > gen_ckpt.txt 2> gen_ckpt.log
if cmp -s gen_flags.txt gen_ckpt.txt && grep -q "tokenizer from .*--tokenizer-type TikTokenizer" gen_ckpt.log; then
  ok "generate --load takes the checkpoint's TikTokenizer: $(head -c 60 gen_ckpt.txt)"
else
  bad "generate without tokenizer flags differs: $(cat gen_ckpt.log | tail -3)"
fi
"$GPTRAIN_BIN/inspect_data" doc --data-path json_v2_text_document --index 16 --load ckpt > dec_ckpt.txt 2> /dev/null
cmp -s dec_ckpt.txt dec_16.txt && ok "inspect_data doc --load decodes with the checkpoint's tokenizer" ||
  bad "inspect_data doc --load differs from the explicit flags"

[ "$fails" -eq 0 ] || { echo "tiktoken_parity: $fails failures"; exit 1; }
echo "tiktoken_parity: OK"
