#!/usr/bin/env python3
"""Fixtures and checks for HuggingFaceTokenizer against Hugging Face `tokenizers` (the reference).

    hf_tokenizer_parity.py train OUT_DIR CORPUS.jsonl...   trains the fixture tokenizers (below) on the corpora
    hf_tokenizer_parity.py hard OUT.jsonl                  hard strings for the Llama-3 regex and added tokens,
                                                           then make_hard_tokenizer_strings' set and sweep
    hf_tokenizer_parity.py bad OUT_DIR TOKENIZER.json      tokenizer.json edge cases that must be refused
    hf_tokenizer_parity.py check --tokenizer DIR --jsonl IN.jsonl --prefix OUT_text_document [--append-eod]
                                                           preprocess_data's ids == tokenizers' encode(text)

Fixtures (byte-level BPE, all 256 byte tokens in the vocabulary):
  neox     NFC normalizer, ByteLevel pre-tokenizer (GPT-2's regex, no prefix space), special <|endoftext|>;
           merges written as "a b" strings
  llama3   Split(Llama-3's regex, Isolated) + ByteLevel(use_regex=False), ignore_merges, the
           <|begin_of_text|> template, tokenizer_config.json with bos/eos; merges as ["a", "b"] lists
  qwen2    as llama3 with Qwen2's single-digit \\p{N}, no template, a non-special added token
  prefix   ByteLevel(add_prefix_space=True), special <|endoftext|> and a non-special added token
"""
import argparse
import copy
import json
import os
import sys
import unicodedata

from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE
from tokenizers.trainers import BpeTrainer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_tokenizer_parity  # noqa: E402  (the .bin/.idx reader)
import make_hard_tokenizer_strings  # noqa: E402

LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")


def texts(paths, limit_bytes=4_000_000):
    n = 0
    for p in paths:
        for line in open(p, encoding="utf-8"):
            t = json.loads(line)["text"]
            n += len(t)
            yield t
            if n > limit_bytes * (paths.index(p) + 1) / len(paths):
                break


def split_byte_level(pattern):
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


def train_one(corpora, pre, specials, vocab_size, ignore_merges=False):
    tok = Tokenizer(BPE(ignore_merges=ignore_merges))
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    trainer = BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts(corpora), trainer)
    return tok


def set_merges_form(path, form):
    j = json.load(open(path, encoding="utf-8"))
    m = j["model"]["merges"]
    if form == "string":
        j["model"]["merges"] = [" ".join(x) if isinstance(x, list) else x for x in m]
    else:
        j["model"]["merges"] = [x.split(" ") if isinstance(x, str) else x for x in m]
    json.dump(j, open(path, "w", encoding="utf-8"), ensure_ascii=False)


def train(out, corpora):
    def save(tok, name, merges_form, config=None):
        os.makedirs(f"{out}/{name}", exist_ok=True)
        tok.save(f"{out}/{name}/tokenizer.json")
        set_merges_form(f"{out}/{name}/tokenizer.json", merges_form)
        if config:
            json.dump(config, open(f"{out}/{name}/tokenizer_config.json", "w"))

    neox = train_one(corpora, pre_tokenizers.ByteLevel(add_prefix_space=False), ["<|endoftext|>"], 3000)
    neox.post_processor = processors.ByteLevel(trim_offsets=False)
    neox.normalizer = normalizers.NFC()  # as GPT-NeoX-20B's (Pythia's) tokenizer.json
    save(neox, "neox", "string")

    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    llama = train_one(corpora, split_byte_level(LLAMA3), specials, 3000, ignore_merges=True)
    bos = llama.token_to_id("<|begin_of_text|>")
    llama.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                      special_tokens=[("<|begin_of_text|>", bos)])])
    save(llama, "llama3", "list",
         {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>", "tokenizer_class": "PreTrainedTokenizerFast"})

    qwen = train_one(corpora, split_byte_level(QWEN2), ["<|endoftext|>", "<|im_start|>"], 2500)
    qwen.add_tokens(["<think>", "think"])  # non-special, normalized: matched after the special ones
    save(qwen, "qwen2", "list")

    prefix = train_one(corpora, pre_tokenizers.ByteLevel(add_prefix_space=True), ["<|endoftext|>"], 2000)
    prefix.add_tokens(["<custom>"])
    save(prefix, "prefix", "string")
    for name in ("neox", "llama3", "qwen2", "prefix"):
        t = Tokenizer.from_file(f"{out}/{name}/tokenizer.json")
        print(f"{name}: vocab {t.get_vocab_size()}")


def nfc_agrees():
    """Code point -> whether tokenizers' NFC treats it as Python's unicodedata (Unicode 14, the tables
    gptrain generates from) does. tokenizers 0.20.3's NFC has older tables: about a hundred combining marks
    added since Unicode 10 are class 0 there, so a run of two of them is not reordered."""
    n = normalizers.NFC()

    def agrees(cp):
        c = chr(cp)
        s = "a" + c + "\u0301" + c + "\u0323" + "1" + c + c + unicodedata.normalize("NFD", c) + "x"
        return n.normalize_str(s) == unicodedata.normalize("NFC", s)
    return agrees


def hard(out):
    s = [
        "'S 'T 'RE 'Ve 'M 'LL 'D 'ſ 'ſs 'K", "a'ſx b'Sx c'LLx d'Rex e'\u212ax f'ßx", "I'M YOU'RE WE'VE", "x'Sx 'st 'dd", "\tword \tword\t\tword",
        " \nword", "\n\nword", "a \n\n b", "!!\n\n\nfoo", " !?\r\n\r\nbar", "  \n  x", "x \r\n \r\n y",
        "1 12 123 1234 12345 123456 1234567", "٣٤٥٦٧ १२३४५ ①②③④", " 123 a123b", "x\u3000\u3000y \u00a0word",
        ",word .Word ¿Qué? «mot» “quoted”", "😀word 😀 word", "\u200bword", "end\n", "end  ", "\r\rx\r",
        "<|begin_of_text|>hello<|end_of_text|>", "<|begin_of_text|><|begin_of_text|>", "<|eot_id|> x <|eot_id|>\n",
        "<|begin_of_tex", "<|endoftext|>a<|endoftext|>", "<|im_start|>user\nhi<think>x</think> thinking",
        "<custom> a<custom>b <custom", " <|endoftext|> <custom> ", "",
    ]
    s += make_hard_tokenizer_strings.hard_strings()
    s += make_hard_tokenizer_strings.sweep(full=False)
    # The Llama-3 rules around each code point: before a letter, after a space, after an apostrophe.
    parts, docs = [], []
    agrees = nfc_agrees()
    for cp in filter(agrees, make_hard_tokenizer_strings.sweep_code_points(False)):
        c = chr(cp)
        parts.append(f"{c}x {c}{c}y\n{c}'{c}1{c}")
        if len(parts) == 4000:
            docs.append("".join(parts))
            parts = []
    s += docs + ["".join(parts)]
    # NFC (the neox fixture's normalizer): every canonically decomposable code point decomposed (NFD) and
    # as it is, combining marks out of order, Hangul jamo, marks with nothing to attach to.
    decomposable = [cp for cp in range(0xC0, 0x30000) if not 0xD800 <= cp <= 0xDFFF and agrees(cp)
                    and unicodedata.decomposition(chr(cp)) and not unicodedata.decomposition(chr(cp)).startswith("<")]
    s.append(" ".join(unicodedata.normalize("NFD", chr(cp)) + "x" for cp in decomposable))
    s.append(" ".join(chr(cp) for cp in decomposable))
    s += ["a\u0323\u0307 a\u0307\u0323 q\u0307\u0323 e\u0301\u0301 \u0301a \u0308\u0301", "\u1100\u1161\u11a8 \u1100\u1161 \uac00\u11a8",
          "\u0928\u093c \u0915\u093c \u0958 \u2126 \u212b \u0344 \u0f73 \u0b47\u0b3e \u0cc6\u0cd5\u0cc2"]
    with open(out, "w", encoding="utf-8") as f:
        for d in s:
            f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
    print(f"{len(s)} documents -> {out}")


def bad(out, src):
    """Each file differs from a good one in one component gptrain refuses; the name says which."""
    good = json.load(open(src, encoding="utf-8"))
    cases = {
        "nfkd": lambda j: j.update(normalizer={"type": "NFKD"}),
        "unknown_regex": lambda j: j["pre_tokenizer"]["pretokenizers"][0]["pattern"].update(Regex=r"\w+|\s+"),
        "removed": lambda j: j["pre_tokenizer"]["pretokenizers"][0].update(behavior="Removed"),
        "wordpiece": lambda j: j["model"].update(type="WordPiece"),
        "byte_fallback": lambda j: j["model"].update(byte_fallback=True),
        "lstrip": lambda j: j["added_tokens"][0].update(lstrip=True),
        "bert_post": lambda j: j.update(post_processor={"type": "BertProcessing", "sep": ["x", 1], "cls": ["y", 2]}),
        "merge_unknown": lambda j: j["model"]["merges"].append(["zz_not_a_token", "q"]),
        "missing_byte": lambda j: j["model"]["vocab"].pop("Ā"),
    }
    for name, change in cases.items():
        j = copy.deepcopy(good)
        change(j)
        json.dump(j, open(f"{out}/{name}.json", "w", encoding="utf-8"), ensure_ascii=False)
    print(" ".join(cases))


def check(a):
    tok = Tokenizer.from_file(os.path.join(a.tokenizer, "tokenizer.json"))
    cfg_path = os.path.join(a.tokenizer, "tokenizer_config.json")
    eod = None
    if os.path.exists(cfg_path):
        eod = tok.token_to_id(json.load(open(cfg_path))["eos_token"])
    else:
        eod = tok.token_to_id("<|endoftext|>")
    docs_text = [json.loads(l)["text"] for l in open(a.jsonl, encoding="utf-8") if l.strip()]
    # One pass (tokenizers takes ~10 s per pass over the three corpora on 2 cores).
    want = [e.ids for e in tok.encode_batch(docs_text)]  # add_special_tokens=True, as Megatron's tokenize()
    bad, total = check_tokenizer_parity.compare_documents(a.prefix, want, docs_text, eod if a.append_eod else None,
                                                          lambda ids: repr(tok.decode(ids, skip_special_tokens=False)))
    if bad is not None:
        return 1
    print(f"{len(want)} documents, {total} tokens equal to tokenizers {__import__('tokenizers').__version__}")
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("train")
    p.add_argument("out")
    p.add_argument("corpora", nargs="+")
    p = sub.add_parser("hard")
    p.add_argument("out")
    p = sub.add_parser("bad")
    p.add_argument("out")
    p.add_argument("src")
    p = sub.add_parser("check")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--jsonl", required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--append-eod", action="store_true")
    a = ap.parse_args()
    if a.cmd == "train":
        return train(a.out, a.corpora)
    if a.cmd == "hard":
        return hard(a.out)
    if a.cmd == "bad":
        return bad(a.out, a.src)
    return check(a)


if __name__ == "__main__":
    sys.exit(main() or 0)
