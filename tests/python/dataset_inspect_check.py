#!/usr/bin/env python3
"""Checks inspect_data's summary and doc output against the JSONL source and Hugging Face's GPT-2
tokenizer (an independent tokenizer implementation).

  dataset_inspect_check.py JSONL VOCAB MERGES SUMMARY_TXT DOC_DIR
DOC_DIR holds doc_<i>.txt (inspect_data doc --index i) and ids_<i>.txt (... --ids) for some i.
"""
import glob
import json
import os
import re
import sys

from transformers import GPT2TokenizerFast


def main():
    jsonl, vocab, merges, summary, docdir = sys.argv[1:6]
    tok = GPT2TokenizerFast(vocab_file=vocab, merges_file=merges)
    texts = [json.loads(line)["text"] for line in open(jsonl, encoding="utf-8") if line.strip()]
    ids = [tok(t)["input_ids"] + [50256] for t in texts]
    s = open(summary).read()
    fields = dict(re.findall(r"^(\w+)\s+(\d+)$", s, re.M))
    assert int(fields["sequences"]) == len(texts), (fields, len(texts))
    assert int(fields["documents"]) == len(texts)
    assert int(fields["tokens"]) == sum(map(len, ids)), (fields["tokens"], sum(map(len, ids)))
    assert "dtype      uint16 (code 8)" in s
    hist = re.findall(r"^\s+\[\s*(\d+),\s*(\d+)\)\s+(\d+)", s, re.M)
    want = {}
    for x in ids:
        b = 0
        while (1 << b) <= len(x):
            b += 1
        want[b] = want.get(b, 0) + 1
    got = {}
    for lo, hi, n in hist:
        got[int(hi).bit_length() - 1] = int(n)
    assert got == want, (got, want)
    checked = 0
    for path in glob.glob(os.path.join(docdir, "doc_*.txt")):
        i = int(re.search(r"doc_(\d+)", path).group(1))
        text = open(path, encoding="utf-8").read()
        expect = texts[i] + "<|endoftext|>"
        assert text in (expect, expect + "\n"), (i, text[:80], expect[:80])
        got_ids = [int(x) for x in open(os.path.join(docdir, "ids_%d.txt" % i)).read().split()]
        assert got_ids == ids[i], i
        checked += 1
    assert checked >= 3
    print("ok   summary and %d decoded documents match the JSONL and HF GPT-2 tokenizer" % checked)


if __name__ == "__main__":
    main()
