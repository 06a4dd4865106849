#!/usr/bin/env python3
"""Fixtures and checks for the SentencePiece tokenizer types against PyPI `sentencepiece` (the reference).

    spm_tokenizer_parity.py train OUT_DIR CORPUS.jsonl...   trains the fixture models (below) on the corpora
    spm_tokenizer_parity.py hard OUT.jsonl                  hard strings (+ make_hard_tokenizer_strings' set and sweep)
    spm_tokenizer_parity.py check --model M --type T --jsonl IN.jsonl --prefix OUT_text_document [--append-eod]
                                                            preprocess_data's ids == Megatron's tokenize(text)
    spm_tokenizer_parity.py decode --model M --type T --jsonl IN.jsonl --index I --got FILE
                                                            inspect_data's text == Megatron's detokenize(ids)
    spm_tokenizer_parity.py hf --hf DIR --model M --jsonl IN.jsonl --prefix P --ckpt CK --bin BIN --generated F
                                                            convert_to_hf's output: LlamaTokenizer and AutoTokenizer
                                                            ids, LlamaForCausalLM's loss == gptrain's, generate

The reference for each --tokenizer-type is Megatron's legacy wrapper (megatron/training/tokenizer) written
out again here over the Python library: GPTSentencePieceTokenizer = encode(text); Llama2Tokenizer = the BOS
id, then encode(text); SentencePieceTokenizer = <CLS> <SEP> <EOD> <MASK> + pad/bos/eos pieces as special
tokens cut out of the text (leftmost, ties to the earliest added), the text between them encoded apart.

Fixtures (trained with byte fallback so no text is unknown, except `unigram`):
  llama    BPE, vocabulary 3000, Llama-2's options: identity normalization, extra spaces kept, digits split
  nfkc     BPE, vocabulary 2000, the trainer's defaults (NFKC, extra spaces removed), a pad piece and a
           user-defined <CLS> piece (SentencePieceTokenizer reuses its id)
  unigram  unigram model, vocabulary 1000, no byte fallback (unknown characters become <unk>)
  nobos    BPE, vocabulary 500, without a BOS piece (bos_id -1): Llama2Tokenizer refuses it
"""
import argparse
import json
import os
import sys

import numpy as np
import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_tokenizer_parity  # noqa: E402  (the .bin/.idx reader)
import make_hard_tokenizer_strings  # noqa: E402


def texts(paths, limit_bytes):
    for p in paths:
        n = 0
        for line in open(p, encoding="utf-8"):
            t = json.loads(line)["text"]
            n += len(t.encode())
            yield t
            if n > limit_bytes / len(paths):
                break


def train(out, corpora):
    os.makedirs(out, exist_ok=True)
    common = dict(minloglevel=2, num_threads=2, max_sentence_length=1 << 16, character_coverage=0.9995)
    spm.SentencePieceTrainer.train(sentence_iterator=texts(corpora, 3_000_000), model_prefix=f"{out}/llama",
                                   model_type="bpe", vocab_size=3000, byte_fallback=True, split_digits=True,
                                   normalization_rule_name="identity", remove_extra_whitespaces=False,
                                   allow_whitespace_only_pieces=True, **common)
    spm.SentencePieceTrainer.train(sentence_iterator=texts(corpora[-1:], 1_000_000), model_prefix=f"{out}/nfkc",
                                   model_type="bpe", vocab_size=2000, byte_fallback=True, pad_id=3,
                                   user_defined_symbols=["<CLS>"], **common)
    spm.SentencePieceTrainer.train(sentence_iterator=texts(corpora[-1:], 1_000_000), model_prefix=f"{out}/unigram",
                                   model_type="unigram", vocab_size=1000, **common)
    spm.SentencePieceTrainer.train(sentence_iterator=texts(corpora[-1:], 200_000), model_prefix=f"{out}/nobos",
                                   model_type="bpe", vocab_size=500, bos_id=-1, **common)
    for name in ("llama", "nfkc", "unigram", "nobos"):
        sp = spm.SentencePieceProcessor(model_file=f"{out}/{name}.model")
        print(f"{name}: {sp.get_piece_size()} pieces, bos {sp.bos_id()} eos {sp.eos_id()} pad {sp.pad_id()}")


def hard(out):
    s = [
        "<s>hello</s>", "<unk> <s> </s>", "<CLS>a<SEP>b<EOD>c<MASK>d<pad><PAD>e<BOS><EOS>", "<EOD><EOD>", "<EO",
        "x<CLS><SEP>", "<extra_id_0> <extra_id_1>", "\u2581\u2581x \u2581", "\u2581", "  two leading spaces",
        "a    b\t\tc\n\n\nd   ", "ｈｅｌｌｏ ﬁ ① ㌀ Ⅻ ½", "e\u0301 vs \u00e9", "\ufffd replacement \ufffd",
        "0" * 300, "1234567890" * 20, " " * 100, "\t" * 50, "\n" * 50, "\x01\x02\x03\x1f\x7f", "\x00 nul",
        "😀" * 40 + " 👨‍👩‍👧‍👦 🏳️‍🌈", "Ελληνικά ქართული Հայերեն ትግርኛ ᏣᎳᎩ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𓀀𓀁", "",
    ]
    s += make_hard_tokenizer_strings.hard_strings()
    s += make_hard_tokenizer_strings.sweep(full=False)
    with open(out, "w", encoding="utf-8") as f:
        for d in s:
            f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
    print(f"{len(s)} documents -> {out}")


class Megatron:
    """Megatron's legacy SentencePiece wrappers, by --tokenizer-type."""

    def __init__(self, model, kind):
        self.sp = spm.SentencePieceProcessor(model_file=model)
        self.kind = kind
        self.vocab = {self.sp.id_to_piece(i): i for i in range(len(self.sp))}
        self.special = {}
        if kind == "SentencePieceTokenizer":
            def add(t):
                if t not in self.vocab:
                    self.vocab[t] = len(self.vocab)
                self.special[t] = self.vocab[t]
                return self.vocab[t]

            def piece(i, stand_in):
                return self.sp.id_to_piece(i) if 0 <= i < len(self.sp) else stand_in

            add("<CLS>"), add("<SEP>")
            self.eod = add("<EOD>")
            add("<MASK>"), add(piece(self.sp.pad_id(), "<PAD>")), add(piece(self.sp.bos_id(), "<BOS>"))
            add(piece(self.sp.eos_id(), "<EOS>"))
        else:
            self.eod = self.sp.eos_id()
        self.inv_special = {i: t for t, i in self.special.items()}
        self.vocab_size = len(self.vocab)

    def tokenize(self, text):
        if self.kind == "Llama2Tokenizer":
            return [self.sp.bos_id()] + self.sp.encode(text)
        if self.kind == "GPTSentencePieceTokenizer":
            return self.sp.encode_as_ids(text)
        ids, idx = [], 0
        while True:
            indices = {}
            for t in self.special:
                k = text.find(t, idx)
                if k >= 0:
                    indices[t] = k
            if not indices:
                break
            t = min(indices, key=indices.get)
            ids.extend(self.sp.encode_as_ids(text[idx:indices[t]]))
            ids.append(self.special[t])
            idx = indices[t] + len(t)
        return ids + self.sp.encode_as_ids(text[idx:])

    def detokenize(self, ids):
        if self.kind != "SentencePieceTokenizer":
            return self.sp.decode_ids(ids)
        text, last = "", 0
        for i, t in enumerate(ids):
            if t in self.inv_special:
                text += self.sp.decode_ids(ids[last:i]) + " " + self.inv_special[t] + " "
                last = i + 1
        return text + self.sp.decode_ids(ids[last:])


def read_docs(path):
    return [json.loads(l)["text"] for l in open(path, encoding="utf-8") if l.strip()]


def check(a):
    ref = Megatron(a.model, a.type)
    texts = read_docs(a.jsonl)
    want = [ref.tokenize(t) for t in texts]
    want = [ids + [ref.eod] if a.append_eod and ids else ids for ids in want]
    bad, total = check_tokenizer_parity.compare_documents(a.prefix, want, texts)
    if bad is not None:
        return 1
    print(f"{len(texts)} documents, {total} tokens equal to sentencepiece {spm.__version__} ({a.type}, "
          f"vocabulary {ref.vocab_size})")
    return 0


def decode(a):
    ref = Megatron(a.model, a.type)
    ids = ref.tokenize(read_docs(a.jsonl)[a.index])
    want = ref.detokenize(ids).encode()
    got = open(a.got, "rb").read()
    if not want.endswith(b"\n"):
        want += b"\n"
    if got != want:
        print(f"document {a.index}: inspect_data {got[:200]!r}\n  sentencepiece {want[:200]!r}", file=sys.stderr)
        return 1
    return 0


def hf(a):
    """convert_to_hf's directory of a Llama2Tokenizer run: both transformers tokenizers give Megatron's ids
    (but for text holding <s>, </s> or <unk>, which transformers takes as its special tokens and
    SentencePiece as text), the model is a LlamaForCausalLM whose loss on the training documents equals the
    loss from gptrain's logits, and generate's greedy text is transformers' greedy continuation."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaTokenizer

    ref = Megatron(a.model, "Llama2Tokenizer")
    slow = LlamaTokenizer.from_pretrained(a.hf)
    fast = AutoTokenizer.from_pretrained(a.hf)
    assert type(fast).__name__ == "LlamaTokenizerFast", type(fast).__name__
    code, lengths, pointers, docs, tokens = check_tokenizer_parity.read_idx(a.prefix)
    offsets = np.concatenate([[0], np.cumsum(lengths.astype(np.int64))])
    corpus = read_docs(a.corpus)
    texts = [t for t in read_docs(a.jsonl) if not any(x in t for x in ("<s>", "</s>", "<unk>"))]
    n = 0
    for i, t in enumerate(texts + corpus[:300]):
        want = ref.tokenize(t)
        if i >= len(texts):  # a document of the .bin: BOS, ids, EOD
            d = i - len(texts)
            assert tokens[offsets[docs[d]]:offsets[docs[d + 1]]].tolist() == want + [ref.eod], f"corpus doc {d}"
        for tok in (slow, fast):
            got = tok(t).input_ids
            assert got == want, f"{type(tok).__name__} on {t[:80]!r}: {got[:12]} vs sentencepiece {want[:12]}"
        n += 1
    print(f"LlamaTokenizer and {type(fast).__name__}: ids equal Megatron's Llama2Tokenizer on {n} texts "
          f"({len(texts)} hard strings)")
    cfg = json.load(open(os.path.join(a.hf, "config.json")))
    assert (cfg["bos_token_id"], cfg["eos_token_id"]) == (ref.sp.bos_id(), ref.sp.eos_id()), cfg

    m = AutoModelForCausalLM.from_pretrained(a.hf).eval()
    assert type(m).__name__ == "LlamaForCausalLM", type(m).__name__
    T = cfg["max_position_embeddings"]
    worst = check_tokenizer_parity.loss_vs_gptrain(
        m, a.ckpt, a.bin, {d: tokens[offsets[docs[d]]:offsets[docs[d + 1]]][:T].tolist() for d in (0, 7, 100)})
    assert worst <= 1e-4, f"losses differ by {worst}"

    prompt = "ROMEO:"
    ids = slow(prompt, return_tensors="pt").input_ids
    g = []
    with torch.no_grad():  # greedy, stopping at the end-of-document id as generate does
        for _ in range(8):
            nxt = int(m(torch.cat([ids, torch.tensor([g], dtype=ids.dtype)], 1)).logits[0, -1].argmax())
            if nxt == ref.eod:
                break
            g.append(nxt)
    want = prompt + ref.sp.decode(ref.sp.encode(prompt) + g)[len(prompt):] + "\n"
    got = open(a.generated, encoding="utf-8").read()
    assert got == want, f"generate printed {got!r}, transformers' greedy text {want!r}"
    print(f"generate: {got.strip()!r} == transformers' greedy continuation; loss max |diff| {worst:.2e}")
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("train")
    p.add_argument("out")
    p.add_argument("corpora", nargs="+")
    p = sub.add_parser("hard")
    p.add_argument("out")
    for name in ("check", "decode"):
        p = sub.add_parser(name)
        p.add_argument("--model", required=True)
        p.add_argument("--type", required=True)
        p.add_argument("--jsonl", required=True)
    sub.choices["check"].add_argument("--prefix", required=True)
    sub.choices["check"].add_argument("--append-eod", action="store_true")
    sub.choices["decode"].add_argument("--index", type=int, required=True)
    sub.choices["decode"].add_argument("--got", required=True)
    p = sub.add_parser("hf")
    for f in ("hf", "model", "jsonl", "corpus", "prefix", "ckpt", "bin", "generated"):
        p.add_argument("--" + f, required=True)
    a = ap.parse_args()
    if a.cmd == "train":
        return train(a.out, a.corpora)
    if a.cmd == "hard":
        return hard(a.out)
    return {"check": check, "decode": decode, "hf": hf}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main() or 0)
