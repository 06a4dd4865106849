#!/usr/bin/env python3
"""Compares a preprocess_data output (.bin/.idx) with Hugging Face `tokenizers` on the same JSONL.

    check_tokenizer_parity.py --jsonl IN.jsonl --prefix OUT_text_document --vocab V --merges M
                              [--key text] [--append-eod] [--endoftext-as-text]

The reference is tokenizers' ByteLevel BPE built from the same vocab/merges (no prefix space), with
<|endoftext|> registered as a special token unless --endoftext-as-text. The .idx is parsed here with
numpy from the documented layout (docs/megatron-compat.md §1.2), independently of the C++ reader. Exits 1
and prints the first differing document on any mismatch.
"""
import argparse
import json
import sys

import numpy as np
from tokenizers import Tokenizer, decoders, pre_tokenizers
from tokenizers.models import BPE

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32, 8: np.uint16}


def loss_vs_gptrain(model, ckpt, bin_dir, documents):
    """transformers' loss and the loss from gptrain_forward's logits on each {name: ids}; prints them and
    returns the largest |difference|."""
    import os
    import subprocess
    import tempfile

    import torch
    from safetensors.torch import load_file

    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for name, ids in documents.items():
            with torch.no_grad():
                hf_loss = model(torch.tensor([ids]), labels=torch.tensor([ids])).loss.item()
            out = os.path.join(tmp, "logits.safetensors")
            subprocess.run([os.path.join(bin_dir, "gptrain_forward"), "--load", ckpt, "--tokens",
                            ",".join(map(str, ids)), "--output", out], check=True, stdout=subprocess.DEVNULL)
            logits = load_file(out)["logits"]
            ours = torch.nn.functional.cross_entropy(logits[:-1], torch.tensor(ids[1:])).item()
            worst = max(worst, abs(ours - hf_loss))
            print(f"  document {name}: {len(ids)} tokens, loss transformers {hf_loss:.6f} gptrain {ours:.6f}")
    return worst


def hf_tokenizer(vocab, merges, endoftext_as_text):
    tok = Tokenizer(BPE.from_file(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    if not endoftext_as_text:
        tok.add_special_tokens(["<|endoftext|>"])
    return tok


def read_idx(prefix):
    raw = open(prefix + ".idx", "rb").read()
    assert raw[:9] == b"MMIDIDX\x00\x00", "bad magic"
    version = int.from_bytes(raw[9:17], "little")
    code = raw[17]
    S = int.from_bytes(raw[18:26], "little")
    D = int.from_bytes(raw[26:34], "little")
    assert version == 1
    assert len(raw) == 34 + 12 * S + 8 * D, "idx size"
    lengths = np.frombuffer(raw, np.int32, S, 34)
    pointers = np.frombuffer(raw, np.int64, S, 34 + 4 * S)
    docs = np.frombuffer(raw, np.int64, D, 34 + 12 * S)
    dtype = DTYPES[code]
    itemsize = np.dtype(dtype).itemsize
    expect_ptr = np.concatenate([[0], np.cumsum(lengths.astype(np.int64) * itemsize)[:-1]]) if S else np.zeros(0)
    assert np.array_equal(pointers, expect_ptr), "pointers are not the running sum of lengths"
    assert docs[0] == 0 and docs[-1] == S, "document index ends"
    tokens = np.fromfile(prefix + ".bin", dtype)
    assert tokens.size == int(lengths.sum()), ".bin size"
    return code, lengths, pointers, docs, tokens


def compare_documents(prefix, want, texts, eod=None, show=repr):
    """The documents of prefix's .bin/.idx against want (one id list per document; eod appended to
    non-empty ones when given). Prints the first difference (show: ids -> text near it) and returns its
    document number, or None when all are equal, with the total token count."""
    code, lengths, pointers, docs, tokens = read_idx(prefix)
    if len(docs) - 1 != len(want):
        print(f"{len(docs) - 1} documents, expected {len(want)}", file=sys.stderr)
        return 0, 0
    offsets = np.concatenate([[0], np.cumsum(lengths.astype(np.int64))])
    total = 0
    for d, ids in enumerate(want):
        if eod is not None and ids:
            ids = ids + [eod]
        got = tokens[offsets[docs[d]]:offsets[docs[d + 1]]].astype(np.int64).tolist()
        if got != ids:
            k = next((i for i, (x, y) in enumerate(zip(got, ids)) if x != y), min(len(got), len(ids)))
            print(f"document {d} differs at token {k}: gptrain {got[max(0, k - 3):k + 5]} reference "
                  f"{ids[max(0, k - 3):k + 5]}\n  near {show(ids[max(0, k - 3):k + 5])}\n  text {texts[d][:200]!r}",
                  file=sys.stderr)
            return d, total
        total += len(ids)
    return None, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl", required=True)
    ap.add_argument("--prefix", required=True)
    ap.add_argument("--vocab", required=True)
    ap.add_argument("--merges", required=True)
    ap.add_argument("--key", default="text")
    ap.add_argument("--append-eod", action="store_true")
    ap.add_argument("--endoftext-as-text", action="store_true")
    a = ap.parse_args()

    tok = hf_tokenizer(a.vocab, a.merges, a.endoftext_as_text)
    texts = [json.loads(l)[a.key] for l in open(a.jsonl, encoding="utf-8") if l.strip()]
    want = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
    code, lengths, pointers, docs, tokens = read_idx(a.prefix)
    if code != 8:
        print(f"dtype code {code}, expected 8 (uint16) for GPT-2", file=sys.stderr)
        return 1
    if len(docs) - 1 != len(texts):
        print(f"{len(docs) - 1} documents, expected {len(texts)}", file=sys.stderr)
        return 1
    offsets = np.concatenate([[0], np.cumsum(lengths.astype(np.int64))])
    total = 0
    for d, ids in enumerate(want):
        if a.append_eod and ids:
            ids = ids + [50256]
        s0, s1 = docs[d], docs[d + 1]
        got = tokens[offsets[s0]:offsets[s1]].astype(np.int64).tolist()
        expect_seqs = 1 if ids else 0
        if got != ids or s1 - s0 != expect_seqs:
            k = next((i for i in range(min(len(got), len(ids))) if got[i] != ids[i]), min(len(got), len(ids)))
            print(f"document {d}: mismatch at token {k} (got {len(got)} tokens in {s1 - s0} sequences, "
                  f"expected {len(ids)})", file=sys.stderr)
            print(f"  got      {got[max(0, k - 5):k + 10]}", file=sys.stderr)
            print(f"  expected {ids[max(0, k - 5):k + 10]}", file=sys.stderr)
            print(f"  text near: {tok.decode(ids[max(0, k - 5):k + 10])!r}", file=sys.stderr)
            return 1
        total += len(ids)
    print(f"parity OK: {len(want)} documents, {total} tokens equal to HF tokenizers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
