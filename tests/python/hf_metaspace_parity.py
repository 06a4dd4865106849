#!/usr/bin/env python3
"""Fixtures for HuggingFaceTokenizer's SentencePiece-converted family (Metaspace, byte fallback), checked
against Hugging Face `tokenizers` with hf_tokenizer_parity.py's check.

    hf_metaspace_parity.py train OUT_DIR CORPUS.jsonl...   trains one character-level BPE, writes the fixtures
    hf_metaspace_parity.py bad OUT_DIR TOKENIZER.json      edge cases that must be refused
    hf_metaspace_parity.py decode DIR IDS.txt TEXT.txt     inspect_data's decode == tokenizers' decode

One BPE is trained with `tokenizers` on the shared corpora (Metaspace split, an alphabet limited to 150
characters so that rarer ones take the byte fallback), then laid out as Llama's files are: <unk> <s> </s>
at ids 0-2, <0x00>..<0xFF> at 3-258 in model.vocab, the merges after. Fixtures, all with byte_fallback:
  llama2   Llama-2's legacy file: normalizer [Prepend "▁", Replace " " -> "▁"], no pre-tokenizer (the
           whole text one word), the <s> template, decoder [Replace, ByteFallback, Fuse, Strip]
  mistral  Metaspace(prepend_scheme first, split false), no normalizer, decoder Metaspace, <s> template
  split    Metaspace(always, split true), ignore_merges, a non-special added token, no template
  unk      as split without byte fallback: unknown characters become <unk> (fuse_unk), never split
"""
import copy
import json
import os
import sys

from tokenizers import Tokenizer, pre_tokenizers
from tokenizers.models import BPE
from tokenizers.trainers import BpeTrainer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_tokenizer_parity import texts  # noqa: E402  (the corpora, a share of each)

SPACE = "\u2581"


def base(corpora):
    tok = Tokenizer(BPE())
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always", split=True)
    tok.train_from_iterator(texts(corpora, 3_000_000), BpeTrainer(vocab_size=3000, limit_alphabet=150, show_progress=False))
    j = json.loads(tok.to_str())
    trained = sorted(j["model"]["vocab"].items(), key=lambda kv: kv[1])
    specials = ["<unk>", "<s>", "</s>"]
    vocab = {t: i for i, t in enumerate(specials + [f"<0x{b:02X}>" for b in range(256)])}
    for t, _ in trained:
        vocab.setdefault(t, len(vocab))
    j["model"].update(vocab=vocab, byte_fallback=True, unk_token="<unk>", fuse_unk=True, ignore_merges=False)
    j["added_tokens"] = [{"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i, t in enumerate(specials)]
    return j


def template():
    return {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                                     {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}


def metaspace(scheme, split):
    return {"type": "Metaspace", "replacement": SPACE, "prepend_scheme": scheme, "split": split}


def train(out, corpora):
    j = base(corpora)
    fixtures = {}
    f = copy.deepcopy(j)
    f.update(normalizer={"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": SPACE}, {"type": "Replace", "pattern": {"String": " "}, "content": SPACE}]},
        pre_tokenizer=None, post_processor=template(),
        decoder={"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]})
    fixtures["llama2"] = f
    f = copy.deepcopy(j)
    f.update(normalizer=None, pre_tokenizer=metaspace("first", False), post_processor=template(),
             decoder={"type": "Sequence", "decoders": [metaspace("first", False), {"type": "ByteFallback"},
                                                       {"type": "Fuse"}]})
    fixtures["mistral"] = f
    f = copy.deepcopy(j)
    f.update(normalizer=None, pre_tokenizer=metaspace("always", True), post_processor=None,
             decoder={"type": "Sequence", "decoders": [{"type": "ByteFallback"}, metaspace("always", True)]})
    f["model"]["ignore_merges"] = True
    f["added_tokens"].append({"id": len(f["model"]["vocab"]), "content": "<think>", "single_word": False,
                              "lstrip": False, "rstrip": False, "normalized": True, "special": False})
    fixtures["split"] = f
    f = copy.deepcopy(fixtures["split"])
    f["model"]["byte_fallback"] = False
    f["decoder"] = metaspace("always", True)
    fixtures["unk"] = f
    for name, f in fixtures.items():
        os.makedirs(f"{out}/{name}", exist_ok=True)
        json.dump(f, open(f"{out}/{name}/tokenizer.json", "w", encoding="utf-8"), ensure_ascii=False)
        json.dump({"bos_token": "<s>", "eos_token": "</s>", "tokenizer_class": "PreTrainedTokenizerFast"},
                  open(f"{out}/{name}/tokenizer_config.json", "w"))
        t = Tokenizer.from_file(f"{out}/{name}/tokenizer.json")
        print(f"{name}: vocab {t.get_vocab_size()} {t.encode('Hello  wörld ∮ 😀').tokens}")


def bad(out, src):
    good = json.load(open(src, encoding="utf-8"))
    cases = {
        "nfkc": lambda j: j.update(normalizer={"type": "NFKC"}),
        "regex_replace": lambda j: j.update(normalizer={"type": "Replace", "pattern": {"Regex": " +"}, "content": SPACE}),
        "scheme": lambda j: j.update(pre_tokenizer=dict(metaspace("first", True), prepend_scheme="sometimes")),
        "decoder_ctc": lambda j: j.update(decoder={"type": "CTC"}),
        "missing_byte": lambda j: j["model"]["vocab"].pop("<0x41>"),
    }
    for name, change in cases.items():
        j = copy.deepcopy(good)
        change(j)
        json.dump(j, open(f"{out}/{name}.json", "w", encoding="utf-8"), ensure_ascii=False)
    print(" ".join(cases))


def decode(tok_dir, ids_file, text_file):
    """inspect_data doc's text (text_file) == tokenizers' decode of the ids it printed with --ids (ids_file)."""
    tok = Tokenizer.from_file(f"{tok_dir}/tokenizer.json")
    ids = [int(x) for x in open(ids_file).read().split()]
    want = tok.decode(ids, skip_special_tokens=False)
    got = open(text_file, "rb").read().decode("utf-8")
    if got != want + ("" if want.endswith("\n") else "\n"):
        print(f"gptrain {got[:160]!r}\ntokenizers {want[:160]!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "train":
        sys.exit(train(sys.argv[2], sys.argv[3:]))
    if cmd == "bad":
        sys.exit(bad(sys.argv[2], sys.argv[3]))
    sys.exit(decode(sys.argv[2], sys.argv[3], sys.argv[4]))
