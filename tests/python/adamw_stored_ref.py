"""One to three AdamW steps with bf16-stored Adam moments, recomputed in numpy float32.

Reads DIR as the unit test "adamw stored moments: dump for the numpy reference" writes it: the start
state p0, m0, v0 and the gradients g0..g2 (fp32), and the kernel's results p_/m_/v_<m>_<v>.f32 for the
storage pairs bf16_bf16, bf16_fp32 and fp32_bf16 (bf16 moments widened to fp32). The reference follows
torch.optim.AdamW's single-tensor order in float32 (lr 3e-3, betas 0.9 / 0.95, eps 1e-8, weight decay
0.1, gradient scale 0.5, steps 1..3) and stores a bf16 moment by rounding to nearest, ties to even, after
every step, as Megatron's precision-aware optimizer (TransformerEngine's FusedAdam) keeps it. Every
value must equal the kernel's bit for bit; bf16 storage must also differ from fp32 storage somewhere.
"""
import argparse
import sys

import numpy as np
from adamw_f32 import adamw_step, bf16_round

ap = argparse.ArgumentParser()
ap.add_argument("--dir", required=True)
a = ap.parse_args()
f32 = np.float32


def load(name):
    return np.fromfile(f"{a.dir}/{name}.f32", dtype=np.float32)


lr, b1, b2, eps, wd, scale = f32(3e-3), f32(0.9), f32(0.95), f32(1e-8), f32(0.1), f32(0.5)
p0, m0, v0 = load("p0"), load("m0"), load("v0")
grads = [load(f"g{s}") for s in range(3)]


def reference(m_bf16, v_bf16):
    p, m, v = p0.copy(), m0.copy(), v0.copy()
    if m_bf16:
        m = bf16_round(m)
    if v_bf16:
        v = bf16_round(v)
    for s, g in enumerate(grads):
        step = s + 1
        p, m, v = adamw_step(p, m, v, g, step, lr, b1, b2, eps, wd, scale)
        if m_bf16:
            m = bf16_round(m)
        if v_bf16:
            v = bf16_round(v)
    return p, m, v


bad = 0
p32, m32, v32 = reference(False, False)
for tag, mb, vb in (("bf16_bf16", True, True), ("bf16_fp32", True, False), ("fp32_bf16", False, True)):
    ref = reference(mb, vb)
    before = bad
    for name, want in zip("pmv", ref):
        got = load(f"{name}_{tag}")
        diff = np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))
        if diff.size:
            i = diff[0]
            print(f"{tag} {name}: {diff.size} of {got.size} values differ, first [{i}] {got[i]!r} != {want[i]!r}")
            bad += 1
    if np.array_equal(ref[0], p32):
        print(f"{tag}: the parameters equal fp32 storage's: the bf16 rounding had no effect")
        bad += 1
    if bad == before:
        print(f"{tag}: p, m, v equal the numpy reference bit for bit ({p0.size} values, 3 steps); "
              f"max |p - p(fp32 moments)| {np.max(np.abs(ref[0] - p32)):.3e}")
sys.exit(1 if bad else 0)
