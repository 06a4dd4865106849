"""Three AdamW steps on bf16 parameters without a master copy, rounded stochastically, in numpy float32.

Reads DIR as the unit test "adamw stochastic rounding: dump for the numpy reference" writes it: the start
state sr_p0 (bf16 values), sr_m0, sr_v0 and the gradients sr_g0..sr_g2 (fp32), and the kernel's results
sr_p/m/v_<fp32|bf16>.f32 (moments fp32, or stored bf16 and rounded to nearest even). The reference steps in
torch.optim.AdamW's single-tensor order (lr 3e-3, betas 0.9 / 0.95, eps 1e-8, weight decay 0.1, gradient
scale 0.5, steps 1..3) and rounds each parameter to bf16 with its own transcription of the bits: Philox4x32-10
(key = the seed's two 32-bit halves, counter = (global index low, high, tensor key, step), word 0) at the
global index base + (i / chunk_local) * chunk_global + i % chunk_local for i = first + k, and rounding the
magnitude up iff the 16 dropped bits exceed the bits' low 16. Every value must equal the kernel's bit for bit.
"""
import argparse
import sys

import numpy as np
from adamw_f32 import adamw_step, bf16_round

ap = argparse.ArgumentParser()
ap.add_argument("--dir", required=True)
a = ap.parse_args()
f32 = np.float32
M32 = np.uint64(0xFFFFFFFF)

SEED, KEY, FIRST, BASE, CL, CG = 0x123456789ABCDEF0, 0xDEADBEEF, 5, 1000, 7, 13


def load(name):
    return np.fromfile(f"{a.dir}/{name}.f32", dtype=np.float32)


def philox_word0(j, tensor_key, step, seed):
    """Philox4x32-10 of counter (lo32(j), hi32(j), tensor_key, step), key (lo32(seed), hi32(seed)): word 0."""
    j = j.astype(np.uint64)
    c0, c1 = j & M32, j >> np.uint64(32)
    c2 = np.full_like(c0, tensor_key)
    c3 = np.full_like(c0, step)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32)
    m0, m1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    for _ in range(10):
        p0, p1 = m0 * c0, m1 * c2  # < 2^64: exact in uint64
        hi0, lo0 = p0 >> np.uint64(32), p0 & M32
        hi1, lo1 = p1 >> np.uint64(32), p1 & M32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + np.uint64(0x9E3779B9)) & M32
        k1 = (k1 + np.uint64(0xBB67AE85)) & M32
    return c0


def bf16_stochastic(x, bits):
    u = x.view(np.uint32).astype(np.uint64)
    up = (u & np.uint64(0xFFFF)) > (bits & np.uint64(0xFFFF))
    r = ((u >> np.uint64(16)) + up.astype(np.uint64)) << np.uint64(16)
    return r.astype(np.uint32).view(np.float32)


lr, b1, b2, eps, wd, scale = f32(3e-3), f32(0.9), f32(0.95), f32(1e-8), f32(0.1), f32(0.5)
p0, m0, v0 = load("sr_p0"), load("sr_m0"), load("sr_v0")
grads = [load(f"sr_g{s}") for s in range(3)]
n = p0.size
i = np.arange(n, dtype=np.uint64) + np.uint64(FIRST)
gidx = np.uint64(BASE) + (i // np.uint64(CL)) * np.uint64(CG) + i % np.uint64(CL)
assert np.all(np.isfinite(p0)) and np.array_equal(bf16_round(p0), p0), "sr_p0 must hold bf16 values"


def reference(bf16_moments):
    p, m, v = p0.copy(), m0.copy(), v0.copy()
    if bf16_moments:
        m, v = bf16_round(m), bf16_round(v)
    for s, g in enumerate(grads):
        step = s + 1
        p, m, v = adamw_step(p, m, v, g, step, lr, b1, b2, eps, wd, scale)
        p = bf16_stochastic(p, philox_word0(gidx, KEY, step, SEED))
        if bf16_moments:
            m, v = bf16_round(m), bf16_round(v)
    return p, m, v


bad = 0
for tag, bm in (("fp32", False), ("bf16", True)):
    ref = reference(bm)
    before = bad
    for name, want in zip("pmv", ref):
        got = load(f"sr_{name}_{tag}")
        diff = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
        if diff.size:
            k = diff[0]
            print(f"moments {tag} {name}: {diff.size} of {n} values differ, first [{k}] {got[k]!r} != {want[k]!r}")
            bad += 1
    if bad == before:
        print(f"moments {tag}: p, m, v equal the numpy reference bit for bit ({n} values, 3 steps)")
sys.exit(1 if bad else 0)
