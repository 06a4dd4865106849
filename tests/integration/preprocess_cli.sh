#!/usr/bin/env bash
# preprocess_data / merge_datasets end to end: output bytes identical for any --workers, for .gz/.zst
# inputs, for several files or a glob vs one concatenated file, and for merge_datasets vs one run;
# Megatron's --partitions orders; JSON arrays as sentences; blank lines; bad lines stop the run with
# file:line and leave no output (or are skipped and counted with --skip-bad-lines); merge_datasets will not
# write over one of its inputs; unsupported flags, bad tokenizer files and corrupt compressed input give clear
# errors; --workers beyond a maximum or the process's memory limit is refused by name, and a worker thread
# that fails stops the run cleanly. ~15 s on 2 cores.
set -euo pipefail
source "$GPTRAIN_SRC/tests/integration/requirements.bash"
need_corpora
rm -rf "$GPTRAIN_TMP" && mkdir -p "$GPTRAIN_TMP" && cd "$GPTRAIN_TMP"
corpora=$GPTRAIN_SHARED/data/corpora
pp=("$GPTRAIN_BIN/preprocess_data" --tokenizer-type GPT2BPETokenizer --log-interval 0)
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
same() {  # same A B: A and B datasets byte-identical
  if cmp -s "$1.bin" "$2.bin" && cmp -s "$1.idx" "$2.idx"; then ok "$1 == $2"; else bad "$1 != $2"; fi
}
expect_error() {  # expect_error NEEDLE CMD...: CMD fails and its stderr holds NEEDLE
  local needle=$1
  shift
  if "$@" > out.txt 2> err.txt; then
    bad "succeeded but should fail: $*"
  elif grep -qF -- "$needle" err.txt; then
    ok "error '$needle'"
  else
    bad "error without '$needle': $(cat err.txt)"
  fi
}

# --- any --workers gives the same bytes (9 batches of ~1 MB in flight, out-of-order completion)
cat "$corpora/python311_docs.jsonl" "$corpora/tinyshakespeare_speeches.jsonl" > big.jsonl
for w in 1 2 4; do "${pp[@]}" --input big.jsonl --output-prefix w$w --workers $w --append-eod > /dev/null; done
same w1_text_document w2_text_document
same w1_text_document w4_text_document

# --- more --workers than the process can afford: refused by name before any thread starts (a fixed
# maximum, the address-space limit); a thread that cannot start or runs out of memory stops the run with
# the same kind of message. Nothing is left under the output names, temporaries included.
expect_error "--workers 100000: expected at most 1024" "${pp[@]}" --input big.jsonl --output-prefix lim --workers 100000
expect_error "--workers 64: the tokenizing threads need about" \
  bash -c 'ulimit -v 1000000 && exec "$@"' limited "${pp[@]}" --input big.jsonl --output-prefix lim --workers 64
grep -qE -- "\(ulimit -v\); use --workers [0-9]+ or fewer" err.txt && ok "the limit and the largest count that fits" ||
  bad "no advice: $(cat err.txt)"
# Under a limit too small for OpenBLAS's buffer its thread retries for ever; exit waited for it (even --help).
rc=0; (ulimit -v 150000; exec timeout 30 "$GPTRAIN_BIN/preprocess_data" --help > /dev/null) || rc=$?
[ $rc = 0 ] && ok "--help under ulimit -v 150000 exits" || bad "--help under ulimit -v 150000: rc $rc (124: hung)"
expect_error "--workers 4: tokenizing thread 3 could not start" \
  env GPTRAIN_FAULT_INJECT=worker-start:3 "${pp[@]}" --input big.jsonl --output-prefix lim --workers 4
expect_error "out of memory in the tokenizing threads with --workers 4" \
  env GPTRAIN_FAULT_INJECT=worker-oom:2 "${pp[@]}" --input big.jsonl --output-prefix lim --workers 4
left=$(ls -a | grep '^lim' || true)
[ -z "$left" ] && ok "no output or temporaries after refused --workers" || bad "left behind: $left"

# --- compressed inputs, several files, globs
gzip -c big.jsonl > big.jsonl.gz
zstd -q -c big.jsonl > big.jsonl.zst
"${pp[@]}" --input big.jsonl.gz --output-prefix gz --workers 2 --append-eod > /dev/null
"${pp[@]}" --input big.jsonl.zst --output-prefix zst --workers 2 --append-eod > /dev/null
same w1_text_document gz_text_document
same w1_text_document zst_text_document
mkdir -p parts
cp "$corpora/python311_docs.jsonl" parts/a.jsonl
cp "$corpora/tinyshakespeare_speeches.jsonl" parts/b.jsonl
gzip -c parts/b.jsonl > parts/b.jsonl.gz && rm parts/b.jsonl
"${pp[@]}" --input parts/a.jsonl parts/b.jsonl.gz --output-prefix multi --append-eod > /dev/null
"${pp[@]}" --input 'parts/*.json*' --output-prefix globbed --append-eod > /dev/null
same w1_text_document multi_text_document
same w1_text_document globbed_text_document

# --- merge_datasets == one run over the concatenation
mkdir -p tomerge
"${pp[@]}" --input parts/a.jsonl --output-prefix tomerge/0 --append-eod > /dev/null
"${pp[@]}" --input parts/b.jsonl.gz --output-prefix tomerge/1 --append-eod > /dev/null
"$GPTRAIN_BIN/merge_datasets" --input tomerge --output-prefix merged > /dev/null
same w1_text_document merged
expect_error "no .bin/.idx datasets" "$GPTRAIN_BIN/merge_datasets" --input parts --output-prefix m2
# An output prefix that is one of the inputs was replaced by the merge.
cp tomerge/0_text_document.bin before.bin
expect_error "is one of the inputs" "$GPTRAIN_BIN/merge_datasets" --input tomerge --output-prefix ./tomerge/0_text_document
cmp -s before.bin tomerge/0_text_document.bin && ok "the input stays" || bad "merge_datasets replaced its input"

# --- partitions: keep-sequential == plain; round-robin == Megatron's order (doc j in partition j % 3)
"${pp[@]}" --input big.jsonl --output-prefix seq --partitions 2 --keep-sequential-samples --append-eod > /dev/null
same w1_text_document seq_text_document
"${pp[@]}" --input "$corpora/tinyshakespeare_speeches.jsonl" --output-prefix rr --partitions 3 --workers 2 > /dev/null
"${pp[@]}" --input "$corpora/tinyshakespeare_speeches.jsonl" --output-prefix rr1 > /dev/null
if ! "${GPTRAIN_PYTHON:-python3}" -c "import numpy" 2> /dev/null; then
  echo "skip: round-robin order check needs numpy (GPTRAIN_PYTHON)"
elif "${GPTRAIN_PYTHON:-python3}" - << 'PY'
import numpy as np
def load(p):
    raw = open(p + ".idx", "rb").read()
    S = int.from_bytes(raw[18:26], "little"); D = int.from_bytes(raw[26:34], "little")
    lens = np.frombuffer(raw, np.int32, S, 34); docs = np.frombuffer(raw, np.int64, D, 34 + 12 * S)
    toks = np.fromfile(p + ".bin", np.uint16); off = np.concatenate([[0], np.cumsum(lens)])
    return [toks[off[docs[d]]:off[docs[d + 1]]].tolist() for d in range(D - 1)]
a, b = load("rr1_text_document"), load("rr_text_document")
order = [j for p in range(3) for j in range(len(a)) if j % 3 == p]
assert b == [a[j] for j in order], "round-robin partition order differs"
PY
then ok "partitions 3 round-robin order"; else bad "partitions 3 round-robin order"; fi

# --- JSON arrays are sentences; blank lines are skipped; empty documents kept as empty documents
printf '%s\n' '{"text": ["Hello world", "", "again"]}' '' '   ' '{"text": ""}' '{"text": "x"}' > sent.jsonl
"${pp[@]}" --input sent.jsonl --output-prefix sent --append-eod > sent.out
# 2 + 0 + 1 sequences: lengths [2, 2] (the EOD joins the last sentence), [2]; doc index 0 2 2 3
want=$(printf 'MMIDIDX\0\0\1\0\0\0\0\0\0\0\10\3\0\0\0\0\0\0\0\4\0\0\0\0\0\0\0' | xxd -p | tr -d '\n')
got=$(head -c 34 sent_text_document.idx | xxd -p | tr -d '\n')
[ "$got" = "$want" ] && ok "sentence header" || bad "sentence header $got"
lens=$(tail -c +35 sent_text_document.idx | head -c 12 | xxd -p)
[ "$lens" = "020000000200000002000000" ] && ok "sentence lengths" || bad "sentence lengths $lens"
docs=$(tail -c 32 sent_text_document.idx | xxd -p | tr -d '\n')
[ "$docs" = "0000000000000000020000000000000002000000000000000300000000000000" ] && ok "document index with empty doc" ||
  bad "document index $docs"
grep -q "2 blank lines" sent.out && ok "blank lines counted" || bad "blank lines: $(cat sent.out)"

# --- bad lines
printf '%s\n' '{"text": "a"}' '{"text": "b"}' '{"text": "c"' '{"text": 5}' '{"other": "d"}' '[1]' '{"text": "e"}' > badlines.jsonl
expect_error "badlines.jsonl:3: malformed JSON" "${pp[@]}" --input badlines.jsonl --output-prefix badout --workers 2
ls badout* > /dev/null 2>&1 && bad "output left behind after an error: $(ls badout*)" || ok "no output after an error"
"${pp[@]}" --input badlines.jsonl --output-prefix skipped --skip-bad-lines > skip.out 2> skip.err
grep -q "4 bad lines skipped" skip.out && grep -q "badlines.jsonl:4: key \"text\" holds a JSON number" skip.err &&
  grep -q "badlines.jsonl:5: missing key \"text\"" skip.err && grep -q "badlines.jsonl:6: expected a JSON object" skip.err &&
  ok "--skip-bad-lines counts and names them" || bad "--skip-bad-lines: $(cat skip.out skip.err)"
[ "$(head -c 34 skipped_text_document.idx | tail -c 16 | xxd -p)" = "03000000000000000400000000000000" ] &&
  ok "3 good documents kept" || bad "skipped dataset header"
expect_error "given twice" "${pp[@]}" --input sent.jsonl --output-prefix k --json-keys text text
expect_error "missing key \"title\"" "${pp[@]}" --input sent.jsonl --output-prefix k --json-keys text title

# --- corrupt compressed input, bad tokenizer files, unsupported flags
head -c 100000 big.jsonl.gz > trunc.jsonl.gz
expect_error "truncated gzip" "${pp[@]}" --input trunc.jsonl.gz --output-prefix t1
head -c 100000 big.jsonl.zst > trunc.jsonl.zst
expect_error "truncated zstd" "${pp[@]}" --input trunc.jsonl.zst --output-prefix t2
ls t1* t2* > /dev/null 2>&1 && bad "output left behind after truncated input" || ok "no output after truncated input"
expect_error "cannot open vocab.json" "${pp[@]}" --input sent.jsonl --output-prefix v --vocab-file nonexistent.json
echo '{"a": 0}' > tiny_vocab.json
expect_error 'no "<|endoftext|>" token' "${pp[@]}" --input sent.jsonl --output-prefix v --vocab-file tiny_vocab.json
echo '{"<|endoftext|>": 0}' > tiny_vocab.json
expect_error "missing the single-byte token" "${pp[@]}" --input sent.jsonl --output-prefix v --vocab-file tiny_vocab.json
expect_error "--merge-file" "${pp[@]}" --input sent.jsonl --output-prefix v --merge-file
expect_error "BertWordPieceCase: not implemented" "$GPTRAIN_BIN/preprocess_data" --input sent.jsonl --output-prefix v --tokenizer-type BertWordPieceCase
expect_error "--split-sentences is a Megatron flag that gptrain does not implement" "${pp[@]}" --input sent.jsonl --output-prefix v --split-sentences
expect_error "matches no file" "${pp[@]}" --input 'nothing*.jsonl' --output-prefix v
expect_error "expected a .jsonl" "${pp[@]}" --input w1_text_document.bin --output-prefix v
"${pp[@]}" --input sent.jsonl --output-prefix v --vocab-extra-ids 0 > warn.txt 2>&1
grep -q -- "--vocab-extra-ids: accepted for compatibility, no effect in gptrain: ignored by GPT2BPETokenizer" warn.txt &&
  ok "ignored tokenizer flag says so" || bad "no info line: $(cat warn.txt)"

# --- progress line with ETA
"$GPTRAIN_BIN/preprocess_data" --tokenizer-type GPT2BPETokenizer --input big.jsonl --output-prefix p \
  --log-interval 1000 > /dev/null 2> progress.txt
grep -q "^Processed 1000 documents .*MB/s.*tokens.*ETA" progress.txt && grep -q "^Processed 7000 documents" progress.txt && grep -q "^Done: 7617 documents" progress.txt &&
  ok "progress and summary lines" || bad "progress: $(cat progress.txt)"

[ $fails -eq 0 ] && echo "preprocess_cli: OK" || { echo "preprocess_cli: $fails failures"; exit 1; }
