#!/usr/bin/env python3
"""Fixtures and checks for TikTokenizer against PyPI `tiktoken` (the reference), built offline.

    tiktoken_parity.py train OUT_DIR CORPUS.jsonl...   a byte-level BPE trained with `tokenizers`, its
                                                       ranks written as Megatron's JSON (vocab.json) and
                                                       as a tiktoken BPE file (vocab.tiktoken); one
                                                       trained on unsplit text windows (cross.json)
    tiktoken_parity.py pieces OUT.json IN.jsonl         a vocabulary of every v1/v2 piece of IN (prints its size)
    tiktoken_parity.py hard OUT.jsonl                  hard strings for the v1/v2 patterns and special
                                                       tokens, make_hard_tokenizer_strings' set, a sweep
    tiktoken_parity.py check --vocab F --pattern v1|v2 --vocab-size V --num-special N [--special T...]
                             --jsonl IN.jsonl --prefix OUT_text_document [--append-eod]
                                                       preprocess_data's ids == tiktoken's
    tiktoken_parity.py hf --hf DIR --vocab F --pattern v1|v2 --vocab-size V --jsonl HARD.jsonl
                          --corpus C.jsonl [--prefix P --ckpt CKPT --bin BIN]
                                                       convert_to_hf's tokenizer.json: AutoTokenizer's ids
                                                       == tiktoken's; with --ckpt, transformers' loss on
                                                       documents of P == gptrain's

The reference is constructed as Megatron's TikTokenTokenizer constructs it: special tokens (the named
ones, then <SPECIAL_k> fillers) take ids 0..N-1, the file's first V-N ranks are shifted up by N, and
text is encoded with encode(text, allowed_special="all").

The two files differ on purpose: vocab.json keeps Megatron's rule (ranks 0..255 are the bytes 0..255
in order), vocab.tiktoken ranks the 256 bytes in GPT-2's printable-first order (as OpenAI's files do)
and lists its lines shuffled.
"""
import argparse
import base64
import json
import os
import random
import sys
import unicodedata


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_tokenizer_parity  # noqa: E402  (the .bin/.idx reader)
import hf_tokenizer_parity  # noqa: E402  (the corpora, a share of each)
import make_hard_tokenizer_strings  # noqa: E402

# Megatron's patterns, verbatim (megatron/core/tokenizers/text/libraries/tiktoken_tokenizer.py).
PATTERNS = {
    "v1": r"[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+",
    "v2": "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+|[^\\r\\n\\p{L}\\p{N}]?"
          "[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|"
          "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
}
DEFAULT_SPECIALS = ["<unk>", "<s>", "</s>", "<mask>", "<pad>", "<cls>", "<sep>"]


def byte_alphabet():
    """GPT-2's bytes_to_unicode: byte -> printable character (the order its vocabulary lists bytes in)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return bs, {chr(c): b for b, c in zip(bs, cs)}


def train_ranks(corpora, pre_tokenizer, windows):
    """Merged tokens (bytes) in merge order, from `tokenizers`' BPE trainer; windows: train on 64-character
    windows of the text as whole pieces, so that tokens cross every split boundary."""
    from tokenizers import Tokenizer
    from tokenizers.models import BPE
    from tokenizers.trainers import BpeTrainer
    from tokenizers import pre_tokenizers
    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizer
    trainer = BpeTrainer(vocab_size=3000, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())

    def texts():
        for t in hf_tokenizer_parity.texts(corpora, 1_000_000 if windows else 3_000_000):
            if windows:
                yield from (t[i:i + 64] for i in range(0, len(t), 64))
            else:
                yield t
    tok.train_from_iterator(texts(), trainer)
    _, to_byte = byte_alphabet()
    merged = []
    for m in json.loads(tok.to_str())["model"]["merges"]:
        a, b = m if isinstance(m, list) else m.split(" ")
        merged.append(bytes(to_byte[c] for c in a + b))
    return merged


def write_megatron_json(path, ranks):
    entries = [{"rank": i, "token_bytes": base64.b64encode(t).decode(), "token_str": t.decode("utf-8", "replace")}
               for i, t in enumerate(ranks)]
    json.dump(entries, open(path, "w"))


def train(out, corpora):
    from tokenizers import Regex, pre_tokenizers
    os.makedirs(out, exist_ok=True)
    # Trained on the Llama-3 split (a realistic vocabulary; the checks use v1/v2).
    llama3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
              r"\s*[\r\n]+|\s+(?!\S)|\s+")
    merged = train_ranks(corpora, pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(llama3), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]), windows=False)
    order, _ = byte_alphabet()
    # Megatron's JSON: bytes 0..255 in order, then the merges.
    write_megatron_json(f"{out}/vocab.json", [bytes([i]) for i in range(256)] + merged)
    # tiktoken's BPE file: bytes in GPT-2's order, then the merges; lines shuffled.
    ranks_tt = [bytes([b]) for b in order] + merged
    lines = [f"{base64.b64encode(t).decode()} {i}" for i, t in enumerate(ranks_tt)]
    random.Random(0).shuffle(lines)
    open(f"{out}/vocab.tiktoken", "w").write("\n".join(lines) + "\n")
    # Tokens across split boundaries (case changes, marks, white space, slashes): a wrong piece boundary
    # changes the ids.
    cross = train_ranks(corpora, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False), windows=True)
    write_megatron_json(f"{out}/cross.json", [bytes([i]) for i in range(256)] + cross)
    print(f"{256 + len(merged)} ranks -> {out}/vocab.json, {out}/vocab.tiktoken; {256 + len(cross)} -> cross.json")


def pieces(out, jsonl):
    """A vocabulary that makes the split visible: the 256 bytes, then every distinct piece of the documents
    under the v1 and v2 patterns (cut by the `regex` module). Each piece is then one token, so ids equal
    tiktoken's only where the two agree on the piece boundaries."""
    import regex
    found = set()
    for line in open(jsonl, encoding="utf-8"):
        t = json.loads(line)["text"]
        for pat in PATTERNS.values():
            found.update(p.encode() for p in regex.findall(pat, t))
    merged = sorted((p for p in found if len(p) > 1), key=lambda p: (len(p), p))
    write_megatron_json(out, [bytes([i]) for i in range(256)] + merged)
    print(256 + len(merged))


def assigned(cp):
    """Assigned in Python's Unicode version: tiktoken's regex crate has newer tables, whose new letters and
    digits gptrain's (Unicode 14) tables class as other."""
    return unicodedata.category(chr(cp)) != "Cn"


def hard(out):
    s = [
        "HELLOworld helloWorld HelloWorld XMLHttpRequest iPhone McDONALD's", " ABC DEF\tGHI\nJKL",
        "ǅungla ǈj ǋ Ǆ ǆ", "ʰʲʷ modifier ˈstress ꜰ", "中文字符 日本語のカタカナ 한국어", "é e\u0301 E\u0301X a\u0308\u0301b",
        "\u0301start \u0301\u0301x x\u0301\u0301 .\u0301a 1\u0301", "ﬁ ﬂ ǲ", "Ⅻ ⅻ ⓐ Ⓐ", "path/to/file/\n//x",
        "a//b\n\n//c/\r\n/", "!!/\n/x ?/", "123 4567 ٣٤٥ १२३", "don't I'M 'S 's",
        "<s>hello</s>", "<unk><mask><pad><cls><sep>", "x<SPECIAL_7>y<SPECIAL_999><SPECIAL_1000>", "<s", "</s", "<SPECIAL_",
        "<|im_start|>user\nhi<|im_end|>", " <s> </s> ", "",
        "Ελληνικά ΑΒΓ αβγ Ωmega", "Кириллица ПРИВЕТмир", "ǇǈǉǊǋǌ",
    ]
    s += make_hard_tokenizer_strings.hard_strings()
    cps = [cp for cp in make_hard_tokenizer_strings.sweep_code_points(False) if assigned(cp)]
    parts, docs = [], []
    for cp in cps:
        c = chr(cp)
        parts.append(f"x{c}1{c} {c}A{c}a{c}{c}Ab\n{c}aB{c}/{c}")
        if len(parts) == 3000:
            docs.append("".join(parts))
            parts = []
    s += docs + ["".join(parts)]
    with open(out, "w", encoding="utf-8") as f:
        for d in s:
            f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
    print(f"{len(s)} documents ({len(cps)} swept code points) -> {out}")


def reference(a):
    import tiktoken
    named = a.special or DEFAULT_SPECIALS
    specials = named + [f"<SPECIAL_{i}>" for i in range(len(named), a.num_special)]
    inner = a.vocab_size - a.num_special
    if a.vocab.endswith(".json"):
        ranks = {base64.b64decode(x["token_bytes"]): x["rank"] for x in json.load(open(a.vocab))[:inner]}
    else:
        ranks = {}
        for line in open(a.vocab, "rb").read().splitlines():
            if line:
                t, r = line.split()
                if int(r) < inner:
                    ranks[base64.b64decode(t)] = int(r)
    enc = tiktoken.Encoding(name="gptrain_fixture", pat_str=PATTERNS[a.pattern],
                            mergeable_ranks={t: r + a.num_special for t, r in ranks.items()},
                            special_tokens={t: i for i, t in enumerate(specials)})
    return enc, specials.index("</s>")


def check(a):
    import tiktoken
    enc, eod = reference(a)
    docs_text = [json.loads(l)["text"] for l in open(a.jsonl, encoding="utf-8") if l.strip()]
    want = [enc.encode(t, allowed_special="all") for t in docs_text]
    bad, total = check_tokenizer_parity.compare_documents(
        a.prefix, want, docs_text, eod if a.append_eod else None,
        lambda ids: [enc.decode_single_token_bytes(t) for t in ids])
    if bad is not None:
        return 1
    print(f"{len(docs_text)} documents, {total} tokens equal to tiktoken {tiktoken.__version__} "
          f"(pattern {a.pattern}, {a.num_special} special tokens, vocabulary {a.vocab_size})")
    return 0


def hf(a):
    """convert_to_hf's directory of a TikTokenizer run: AutoTokenizer (PreTrainedTokenizerFast on the written
    tokenizer.json) gives tiktoken's ids on the hard strings and the corpus, decodes them back, and (with
    --ckpt) the model's loss on documents of the .bin equals the loss from gptrain's logits."""
    import numpy as np
    from transformers import AutoModelForCausalLM, AutoTokenizer

    enc, eod = reference(argparse.Namespace(vocab=a.vocab, pattern=a.pattern, vocab_size=a.vocab_size,
                                            num_special=a.num_special, special=None))
    tok = AutoTokenizer.from_pretrained(a.hf)
    assert type(tok).__name__ == "PreTrainedTokenizerFast", type(tok).__name__
    assert tok.eos_token_id == eod, (tok.eos_token_id, eod)
    hard_texts = [json.loads(l)["text"] for l in open(a.jsonl, encoding="utf-8") if l.strip()]
    corpus = [json.loads(l)["text"] for l in open(a.corpus, encoding="utf-8") if l.strip()]
    n = ntok = 0
    # Every 4th corpus document (about 1M tokens): the hard strings hold the corner cases, and the test's
    # preprocess_data checks cover the whole corpora; HF tokenizers takes ~20 s per pass over all of it.
    texts = hard_texts + corpus[::4]
    # Both in batches (the same ids as one text at a time; each library's threads share the work).
    wants = enc.encode_batch(texts, allowed_special="all", num_threads=2)
    for t, want, got in zip(texts, wants, tok(texts).input_ids):
        assert got == want, f"AutoTokenizer on {t[:80]!r}: {got[:16]} vs tiktoken {want[:16]}"
        if enc.decode_bytes(want) == t.encode():  # decode: the same text back
            # As a numpy array: transformers converts a list to Python ints one element at a time.
            assert tok.decode(np.asarray(got)) == t, f"decode of {t[:80]!r}"
        n += 1
        ntok += len(want)
    print(f"AutoTokenizer ({type(tok).__name__}): ids equal tiktoken's on {n} texts, {ntok} tokens "
          f"({len(hard_texts)} hard strings, every 4th corpus document, pattern {a.pattern})")
    if not a.ckpt:
        return 0
    code, lengths, pointers, docs, tokens = check_tokenizer_parity.read_idx(a.prefix)
    offsets = np.concatenate([[0], np.cumsum(lengths.astype(np.int64))])
    m = AutoModelForCausalLM.from_pretrained(a.hf).eval()
    cfg = json.load(open(os.path.join(a.hf, "config.json")))
    assert (cfg["bos_token_id"], cfg["eos_token_id"]) == (tok.bos_token_id, eod), cfg
    T = cfg.get("max_position_embeddings", cfg.get("n_positions"))
    documents = {}
    for d in (0, 7, 100):
        ids = tok(corpus[d]).input_ids + [tok.eos_token_id]  # preprocess_data --append-eod
        assert ids == tokens[offsets[docs[d]]:offsets[docs[d + 1]]].tolist(), f"document {d} of {a.prefix}"
        documents[d] = ids[:T]
    worst = check_tokenizer_parity.loss_vs_gptrain(m, a.ckpt, a.bin, documents)
    assert worst <= 1e-4, f"losses differ by {worst}"
    print(f"{type(m).__name__}: loss on AutoTokenizer's ids equals gptrain's (max |diff| {worst:.2e})")
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("train")
    p.add_argument("out")
    p.add_argument("corpora", nargs="+")
    p = sub.add_parser("hard")
    p.add_argument("out")
    p = sub.add_parser("pieces")
    p.add_argument("out")
    p.add_argument("jsonl")
    p = sub.add_parser("check")
    p.add_argument("--vocab", required=True)
    p.add_argument("--pattern", required=True, choices=["v1", "v2"])
    p.add_argument("--vocab-size", type=int, required=True)
    p.add_argument("--num-special", type=int, default=1000)
    p.add_argument("--special", nargs="*")
    p.add_argument("--jsonl", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--append-eod", action="store_true")
    p = sub.add_parser("hf")
    p.add_argument("--hf", required=True)
    p.add_argument("--vocab", required=True)
    p.add_argument("--pattern", required=True, choices=["v1", "v2"])
    p.add_argument("--vocab-size", type=int, required=True)
    p.add_argument("--num-special", type=int, default=1000)
    p.add_argument("--jsonl", required=True)
    p.add_argument("--corpus", required=True)
    p.add_argument("--prefix")
    p.add_argument("--ckpt")
    p.add_argument("--bin")
    a = ap.parse_args()
    if a.cmd == "hf":
        return hf(a)
    if a.cmd == "train":
        return train(a.out, a.corpora)
    if a.cmd == "hard":
        return hard(a.out)
    if a.cmd == "pieces":
        return pieces(a.out, a.jsonl)
    return check(a)


if __name__ == "__main__":
    sys.exit(main() or 0)
