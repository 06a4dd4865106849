#!/usr/bin/env python3
"""Write a large synthetic MMIDIDX dataset (uint16) fast, for benchmarks.

  dataset_synthetic.py PREFIX --tokens 1e9 [--seed 0] [--mean-len 600] [--sparse]

Document lengths are lognormal (clipped to [1, 32768]) and sum to exactly --tokens; tokens are random
uint16 < 50257 written in 64 MiB chunks, or, with --sparse, a sparse .bin of the right size (reads as
zeros, uses no disk; enough for index benchmarks, which never read tokens).
"""
import argparse
import struct

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("prefix")
    ap.add_argument("--tokens", type=float, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mean-len", type=float, default=600.0)
    ap.add_argument("--sparse", action="store_true")
    a = ap.parse_args()
    total = int(a.tokens)
    rs = np.random.RandomState(a.seed)
    n_guess = int(total / a.mean_len * 1.2) + 16
    sigma = 1.0
    mu = np.log(a.mean_len) - sigma * sigma / 2
    lens = np.clip(rs.lognormal(mu, sigma, size=n_guess), 1, 32768).astype(np.int64)
    csum = np.cumsum(lens)
    while csum[-1] < total:  # rare: draw more
        more = np.clip(rs.lognormal(mu, sigma, size=n_guess), 1, 32768).astype(np.int64)
        lens = np.concatenate([lens, more])
        csum = np.cumsum(lens)
    n = int(np.searchsorted(csum, total)) + 1
    lens = lens[:n]
    lens[-1] -= int(csum[n - 1] - total)
    if lens[-1] <= 0:
        lens = lens[:-1]
    assert int(lens.sum()) == total
    S = len(lens)
    with open(a.prefix + ".bin", "wb") as f:
        if a.sparse:
            f.truncate(total * 2)
        else:
            chunk = 32 << 20
            left = total
            while left > 0:
                k = min(chunk, left)
                f.write(rs.randint(0, 50257, size=k).astype(np.uint16).tobytes())
                left -= k
    ptrs = np.zeros(S, dtype=np.int64)
    ptrs[1:] = np.cumsum(lens[:-1]) * 2
    with open(a.prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, 8, S, S + 1))
        f.write(lens.astype(np.int32).tobytes())
        f.write(ptrs.tobytes())
        f.write(np.arange(S + 1, dtype=np.int64).tobytes())
    print("%s: %d tokens in %d documents%s" % (a.prefix, total, S, " (sparse .bin)" if a.sparse else ""))


if __name__ == "__main__":
    main()
