#!/usr/bin/env python3
"""Single-threaded Hugging Face tokenizers (Rust ByteLevel BPE, GPT-2 files) over a JSONL file, for
tests/bench/bench_preprocess.sh. Prints one line: key=value pairs (bytes, docs, tokens, wall and CPU
seconds of the tokenization only, JSON parsing excluded) and the same for JSON parsing.

    bench_hf_tokenizers.py --jsonl IN --vocab V --merges M [--key text]
    bench_hf_tokenizers.py --jsonl IN --tokenizer-json T [--key text]   (special tokens added, as Megatron's
                                                                        HuggingFaceTokenizer and preprocess_data)
    bench_hf_tokenizers.py --jsonl IN --spm-model M [--spm-bos]         PyPI sentencepiece's encode (one thread
                                                                        per call), plus a BOS id per document
    bench_hf_tokenizers.py --jsonl IN --tiktoken VOCAB --pattern v1|v2 --vocab-size V [--num-special N]
        PyPI tiktoken built as Megatron's TikTokenizer builds it (tests/python/tiktoken_parity.py), encode(text,
        allowed_special="all") per document; tiktoken's Rust side is single-threaded for one encode()

RAYON_NUM_THREADS=1 and TOKENIZERS_PARALLELISM=false are set before tokenizers is imported, and
documents are encoded one by one with encode(), so the Rust side uses one thread.
"""
import argparse
import json
import os
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
from tokenizers import Tokenizer, pre_tokenizers  # noqa: E402
from tokenizers.models import BPE  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jsonl", required=True)
    ap.add_argument("--vocab")
    ap.add_argument("--merges")
    ap.add_argument("--tokenizer-json")
    ap.add_argument("--spm-model")
    ap.add_argument("--spm-bos", action="store_true")
    ap.add_argument("--key", default="text")
    ap.add_argument("--tiktoken")
    ap.add_argument("--pattern", default="v2")
    ap.add_argument("--vocab-size", type=int)
    ap.add_argument("--num-special", type=int, default=1000)
    a = ap.parse_args()
    encode = None
    if a.spm_model:
        import sentencepiece
        sp = sentencepiece.SentencePieceProcessor(model_file=a.spm_model)
        bos = [sp.bos_id()] if a.spm_bos else []
        encode = lambda t: bos + sp.encode(t)  # noqa: E731
    elif a.tiktoken:
        import sys
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import tiktoken_parity
        enc, _ = tiktoken_parity.reference(argparse.Namespace(vocab=a.tiktoken, pattern=a.pattern, vocab_size=a.vocab_size,
                                                              num_special=a.num_special, special=None))
        encode = lambda t: enc.encode(t, allowed_special="all")  # noqa: E731
    elif a.tokenizer_json:
        tok = Tokenizer.from_file(a.tokenizer_json)
    else:
        tok = Tokenizer(BPE.from_file(a.vocab, a.merges))
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.add_special_tokens(["<|endoftext|>"])
    specials = bool(a.tokenizer_json)
    if encode is None:
        encode = lambda t: tok.encode(t, add_special_tokens=specials).ids  # noqa: E731
    lines = open(a.jsonl, "rb").read().splitlines()
    nbytes = sum(len(l) + 1 for l in lines)
    w0, c0 = time.perf_counter(), time.process_time()
    texts = [json.loads(l)[a.key] for l in lines if l.strip()]
    w1, c1 = time.perf_counter(), time.process_time()
    ntok = 0
    for t in texts:
        ntok += len(encode(t))
    w2, c2 = time.perf_counter(), time.process_time()
    print(f"bytes={nbytes} docs={len(texts)} tokens={ntok} tok_wall={w2 - w1:.4f} tok_cpu={c2 - c1:.4f} "
          f"json_wall={w1 - w0:.4f} json_cpu={c1 - c0:.4f}")


if __name__ == "__main__":
    main()
