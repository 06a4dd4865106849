#!/usr/bin/env python3
"""Independent numpy reference for gptrain's GPT sample order (Megatron's GPTDataset / BlendedDataset).

Written from the algorithm description (docs/megatron-compat.md §2), not from gptrain's C++:
numpy.random.RandomState does the shuffles, plain Python loops build the sample index.

  dataset_index_ref.py make PREFIX --docs N --seed S [--max-len L] [--vocab V]
      write a synthetic uint16 .bin/.idx pair (MMIDIDX format) with random document lengths
  dataset_index_ref.py samples --data-path ... [--split ...] --seq-length S [--seed N]
      [--train-samples N] [--valid-samples N] [--test-samples N] [--train-data-path ...] ...
      print "split index fnv1a64hex" for every sample of every split (all len(dataset) samples)
  dataset_index_ref.py arrays ... --out DIR  (same flags) save document/sample/shuffle arrays per split
"""
import argparse
import math
import os
import re
import struct
import sys

import numpy as np

DTYPES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32, 8: np.uint16}
SPLITS = ["train", "valid", "test"]


def write_dataset(prefix, lengths, rng, vocab, eod):
    with open(prefix + ".bin", "wb") as f:
        for n in lengths:
            toks = rng.randint(0, vocab, size=n).astype(np.uint16)
            if n > 0:
                toks[-1] = eod
            f.write(toks.tobytes())
    S = len(lengths)
    lens = np.array(lengths, dtype=np.int32)
    ptrs = np.zeros(S, dtype=np.int64)
    if S > 1:
        ptrs[1:] = np.cumsum(lens[:-1].astype(np.int64)) * 2
    doc = np.arange(S + 1, dtype=np.int64)
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", 8))
        f.write(struct.pack("<Q", S))
        f.write(struct.pack("<Q", S + 1))
        f.write(lens.tobytes())
        f.write(ptrs.tobytes())
        f.write(doc.tobytes())


class Indexed:
    def __init__(self, prefix):
        with open(prefix + ".idx", "rb") as f:
            data = f.read()
        assert data[:9] == b"MMIDIDX\x00\x00", prefix
        code = data[17]
        S, D = struct.unpack("<QQ", data[18:34])
        self.lengths = np.frombuffer(data, dtype=np.int32, count=S, offset=34)
        self.pointers = np.frombuffer(data, dtype=np.int64, count=S, offset=34 + 4 * S)
        self.dtype = DTYPES[code]
        self.bin = np.memmap(prefix + ".bin", dtype=np.uint8, mode="r")

    def tokens(self, seq, off, count):
        it = np.dtype(self.dtype).itemsize
        start = int(self.pointers[seq]) + off * it
        return np.frombuffer(self.bin[start:start + count * it].tobytes(), dtype=self.dtype).astype(np.int64)


def split_matrix(split):
    w = [float(x) for x in re.findall(r"[.0-9]+", split)]
    w = w + [0.0] * (3 - len(w))
    s = sum(w)
    w = [x / s for x in w]
    bounds = [0.0]
    for x in w:
        bounds.append(bounds[-1] + x)
    return [None if bounds[i] == bounds[i + 1] else (bounds[i], bounds[i + 1]) for i in range(3)]


class GPT:
    def __init__(self, ds, beg, end, S, num_samples, seed):
        self.ds, self.S = ds, S
        docs = np.arange(beg, end, dtype=np.int32)
        lens = ds.lengths
        T = int(np.sum(lens[beg:end].astype(np.int64)))
        E = 1
        if num_samples is not None:
            assert T > 0
            while E * T < num_samples * S + 1:
                E += 1
        sep = False
        if E > 1:
            sans = ((E - 1) * T - 1) // S
            per = (T - 1) // S
            sep = (num_samples - sans) < int(0.80 * per)
        rs = np.random.RandomState(seed)

        def shuffled(epochs):
            a = np.tile(docs, epochs).astype(np.int32)
            rs.shuffle(a)
            return a

        sys.stderr.write("GPT range [%d, %d) epochs %d separate_final_epoch %s\n" % (beg, end, E, sep))
        doc_idx = np.concatenate([shuffled(E - 1), shuffled(1)]) if sep else shuffled(E)
        n = (E * T - 1) // S
        si = [(0, 0)]
        d, off = 0, 0
        while len(si) <= n:
            need = S + 1
            while need > 0:
                L = int(lens[doc_idx[d]]) - off
                if need <= L:
                    off += need - 1
                    need = 0
                else:
                    need -= L
                    d += 1
                    off = 0
            si.append((d, off))
        first = sans if sep else n
        p = np.arange(first, dtype=np.int64)
        rs.shuffle(p)
        q = np.arange(first, n, dtype=np.int64)
        rs.shuffle(q)
        self.doc_idx, self.sample_idx, self.shuffle = doc_idx, np.array(si, dtype=np.int64), np.concatenate([p, q])

    def __len__(self):
        return len(self.shuffle)

    def __getitem__(self, i):
        k = self.shuffle[i]
        (d0, o0), (d1, o1) = self.sample_idx[k], self.sample_idx[k + 1]
        parts = []
        for d in range(d0, d1 + 1):
            seq = int(self.doc_idx[d])
            a = o0 if d == d0 else 0
            b = o1 + 1 if d == d1 else int(self.ds.lengths[seq])
            parts.append(self.ds.tokens(seq, a, b - a))
        w = np.concatenate(parts)
        assert len(w) == self.S + 1
        return w


def normalize(w):
    w = np.array(w, dtype=np.float64)
    return (w / np.sum(w)).tolist()


class Blended:
    def __init__(self, datasets, weights, size):
        self.datasets = datasets
        if size is not None:
            weights = normalize(weights)
            total = size
        else:
            total = int(sum(weights))
            sizes = list(weights)
            weights = [x / float(total) for x in weights]
        counts = [0] * len(datasets)
        self.index = []
        s = 0
        while len(self.index) < total:
            x = max(float(s), 1.0)
            best, best_err = None, None
            for i, w in enumerate(weights):
                if size is None and counts[i] >= sizes[i]:
                    continue
                err = w * x - counts[i]
                if best is None or err > best_err:
                    best, best_err = i, err
            self.index.append((best, counts[best]))
            counts[best] += 1
            s += 1
        for i, c in enumerate(counts):
            assert c <= len(datasets[i]), "blend oversamples dataset %d" % i

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        d, j = self.index[i]
        return self.datasets[d][j]


def parse_blend(items):
    if len(items) % 2 == 1:
        return items, None
    try:
        weights = [float(x) for x in items[0::2]]
    except ValueError:
        return items, None
    return items[1::2], weights


def build(args):
    sizes = [args.train_samples, args.valid_samples, args.test_samples]
    cache = {}

    def indexed(p):
        if p not in cache:
            cache[p] = Indexed(p)
        return cache[p]

    def gpt(prefix, split_k, bounds, size):
        ds = indexed(prefix)
        N = len(ds.lengths)
        beg, end = int(round(bounds[0] * N)), int(round(bounds[1] * N))
        return GPT(ds, beg, end, args.seq_length, size, args.seed)

    def blend_split(prefixes, weights, k, bounds, size):
        if len(prefixes) == 1 and weights is None:
            return gpt(prefixes[0], k, bounds, size)
        if weights is not None:
            weights = normalize(weights)
            target = [int(math.ceil(size * w)) for w in weights]
            buf = [int(math.ceil(math.ceil(size * w) * (1 + args.surplus))) for w in weights]
            mids = [gpt(p, k, bounds, b) for p, b in zip(prefixes, buf)]
            return Blended(mids, weights, sum(target))
        mids = [gpt(p, k, bounds, None) for p in prefixes]
        lens = [len(m) for m in mids]
        return Blended(mids, lens, None if size is None else min(size, sum(lens)))

    out = [None, None, None]
    if args.data_path:
        prefixes, weights = parse_blend(args.data_path)
        m = split_matrix(args.split)
        for k in range(3):
            if m[k] is not None:
                assert weights is None or sizes[k] is not None, "weights need a size"
                out[k] = blend_split(prefixes, weights, k, m[k], sizes[k])
    else:
        for k, items in enumerate([args.train_data_path, args.valid_data_path, args.test_data_path]):
            if items:
                prefixes, weights = parse_blend(items)
                if len(prefixes) == 1:
                    weights = None
                out[k] = blend_split(prefixes, weights, k, (0.0, 1.0), sizes[k])
    return out


def fnv1a64(tokens):
    h = 0xCBF29CE484222325
    for b in np.asarray(tokens, dtype="<u4").tobytes():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("cmd", choices=["make", "samples", "arrays"])
    ap.add_argument("prefix", nargs="?")
    ap.add_argument("--docs", type=int, default=100)
    ap.add_argument("--max-len", type=int, default=200)
    ap.add_argument("--vocab", type=int, default=50257)
    ap.add_argument("--data-path", nargs="+")
    ap.add_argument("--train-data-path", nargs="+")
    ap.add_argument("--valid-data-path", nargs="+")
    ap.add_argument("--test-data-path", nargs="+")
    ap.add_argument("--split", default="969, 30, 1")
    ap.add_argument("--seq-length", type=int)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--train-samples", type=int)
    ap.add_argument("--valid-samples", type=int)
    ap.add_argument("--test-samples", type=int)
    ap.add_argument("--surplus", type=float, default=0.005)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.cmd == "make":
        rng = np.random.RandomState(a.seed)
        lengths = [int(x) for x in rng.randint(1, a.max_len + 1, size=a.docs)]
        write_dataset(a.prefix, lengths, rng, a.vocab, a.vocab - 1)
        return
    splits = build(a)
    if a.cmd == "arrays":
        os.makedirs(a.out, exist_ok=True)
        for k, ds in enumerate(splits):
            if isinstance(ds, GPT):
                np.save(os.path.join(a.out, SPLITS[k] + "-document_index.npy"), ds.doc_idx)
                np.save(os.path.join(a.out, SPLITS[k] + "-sample_index.npy"), ds.sample_idx)
                np.save(os.path.join(a.out, SPLITS[k] + "-shuffle_index.npy"), ds.shuffle)
        return
    w = sys.stdout.write
    for k, ds in enumerate(splits):
        if ds is None:
            continue
        for i in range(len(ds)):
            w("%s %d %016x\n" % (SPLITS[k], i, fnv1a64(ds[i])))


if __name__ == "__main__":
    main()
