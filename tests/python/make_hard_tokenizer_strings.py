#!/usr/bin/env python3
"""Writes JSONL documents that stress GPT-2 tokenization (for the parity test against HF tokenizers).

    make_hard_tokenizer_strings.py OUT.jsonl [--sweep=boundaries|full]

Hand-picked hard strings (white space kinds and runs, contractions, <|endoftext|>, scripts, emoji,
digits of other scripts, long runs), then a sweep of Unicode scalar values >= U+0080, each in a
context that reveals its pre-tokenizer class (letter, number, space or other):
  boundaries: both sides of every change of class (by Python's unicodedata, independent of the C++
              table) plus every 31st code point; ~40k code points, a few seconds in HF tokenizers.
  full:       all 1.1M code points (about a minute in HF tokenizers; run by hand when the tables change).
"""
import json
import sys
import unicodedata

WHITE_SPACE = [0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680] + list(range(0x2000, 0x200B)) + [
    0x2028, 0x2029, 0x202F, 0x205F, 0x3000]
NOT_SPACE = [0x1C, 0x1D, 0x1E, 0x1F, 0x180E, 0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF]


def hard_strings():
    s = [
        "Hello world", " leading space", "trailing space ", "  two leading", "a  b   c    d",
        "line\nbreak", "crlf\r\nline\r\n", "\n\n\nnewlines first", "end with newlines\n\n\n",
        "tabs\tand\t\tmore", " \t \n mixed \r\n\t x", "\u0085NEL\u0085 \u0085x", "\ufeffBOM at start", "mid\ufeffBOM",
        "I'm you're we've they'll he'd it's can't", "I'M YOU'RE 'S 'T", "''s '''ll 'x ' s", "rock'n'roll",
        "don't\n'twas 'tis", "<|endoftext|>", "a<|endoftext|>b", "<|endoftext|><|endoftext|>",
        " <|endoftext|> ", "<|endoftext|", "<|endoftext|>\n<|endoftext|>x", "<|endofprompt|>",
        "café naïve résumé Ørsted", "Привет, мир!", "你好，世界。中文字符", "日本語のテキスト、カタカナ",
        "한국어 텍스트", "مرحبا بالعالم ٣٤٥", "नमस्ते दुनिया १२३", "ภาษาไทย", "עברית",
        "😀😃😄 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈", "e\u0301 combining a\u0308", "Ⅻ ½ ² ³ ① ٣ ௫",
        "123456789012345678901234567890", "3.14159 1,000,000 -42 +7e10", "x=1;y=2//z",
        "    def f(x):\n        return x  # comment\n", "http://example.com/a?b=c&d=e#f",
        "=" * 300, " " * 500, "a" * 1000, "!" * 77 + "?" * 33, "\n" * 200, "\u3000" * 40 + "x",
        "ÿ\u00ad\u00a0soft hyphen and nbsp", "\x00\x01\x02 control \x7f chars", "\U0001F600" * 64,
        "".join(chr(c) for c in range(0x20, 0x7F)),
    ]
    for w in WHITE_SPACE + NOT_SPACE:
        c = chr(w)
        s.append(f"a{c}b {c}x{c}{c}1{c}.{c}")
        s.append(f"{c}{c} y {c} ")
    return s


def klass(cp):
    if cp in WHITE_SPACE:
        return "space"
    return unicodedata.category(chr(cp))[0]


def sweep_code_points(full):
    cps = [cp for cp in range(0x80, 0x110000) if not 0xD800 <= cp <= 0xDFFF]
    if full:
        return cps
    keep = set(cps[::31])
    for a, b in zip(cps, cps[1:]):
        if klass(a) != klass(b):
            keep.update((a, b))
    return sorted(keep)


def sweep(full, chunk=4000):
    docs, parts = [], []
    for cp in sweep_code_points(full):
        c = chr(cp)
        parts.append(f"x{c}1{c} {c}")
        if len(parts) == chunk:
            docs.append("".join(parts))
            parts = []
    if parts:
        docs.append("".join(parts))
    return docs


def main():
    out = sys.argv[1]
    docs = hard_strings()
    if "--sweep=full" in sys.argv[2:]:
        docs += sweep(full=True)
    elif "--sweep=boundaries" in sys.argv[2:]:
        docs += sweep(full=False)
    with open(out, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(json.dumps({"text": d}, ensure_ascii=False) + "\n")
    print(f"{len(docs)} documents -> {out}")


if __name__ == "__main__":
    main()
