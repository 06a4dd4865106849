"""The float32 AdamW step the optimizer-kernel references share (adamw_stored_ref.py, adamw_stochastic_ref.py):
torch.optim.AdamW's single-tensor order in numpy float32, the per-step constants computed in double and
rounded once, and bf16 rounding to nearest (ties to even)."""
import numpy as np

f32 = np.float32


def bf16_round(x):
    """float32 -> nearest bf16 (ties to even), widened back to float32 (no NaNs here)."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


def adamw_step(p, m, v, g, step, lr, b1, b2, eps, wd, scale):
    """One step (step counts from 1) on float32 arrays; returns the new p, m, v."""
    decay = f32(1.0 - float(lr) * float(wd))
    step_size = f32(float(lr) / (1.0 - float(b1) ** step))
    bc2_sqrt = f32(np.sqrt(1.0 - float(b2) ** step))
    gg = g * scale
    p = p * decay
    m = m + (f32(1) - b1) * (gg - m)
    v = v * b2 + (f32(1) - b2) * gg * gg
    denom = np.sqrt(v) / bc2_sqrt + eps
    return p - step_size * (m / denom), m, v
