"""An independent torch reference of Megatron's --optimizer muon, written from the published algorithm (Jordan
et al.'s Muon: momentum, then a quintic Newton-Schulz iteration towards the orthogonal polar factor) with the
choices Megatron makes (its TensorParallelMuon over emerging-optimizers' OrthogonalizedOptimizer):

  - which tensors: every 2-D weight except the word embeddings and the output layer; the query, key and value
    projections are orthogonalized separately (--muon-split-qkv, the default); the MLP's gate and up
    projections are ONE matrix [gate; up] (Megatron's fused linear_fc1);
  - per step: p -= lr * wd * p (decoupled), buf = lerp(buf, g, 1 - momentum), u = buf (or the Nesterov
    lerp(g, buf, momentum)), O = NS(u), p -= lr * O * scale * extra, scale sqrt(max(out, in)) (spectral);
  - NS: X = u / max(|u|_F, 1e-7), on u^T when u has more rows than columns; per step (a, b, c) of the quintic
    set (cycled): A = X X^T, B = b A + c A A, X = a X + B X; fp32 (--muon-fp32-matmul-prec high).

The other parameters are the caller's (torch.optim.AdamW)."""
import torch

QUINTIC = [(4.0848, -6.8946, 2.9270), (3.9505, -6.3029, 2.6377), (3.7418, -5.5913, 2.3037),
           (2.8769, -3.1427, 1.2046), (2.8366, -3.0525, 1.2012)]


def newton_schulz(u, steps=5):
    x = u.float()
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    x = x / torch.clamp(torch.linalg.norm(x), min=1e-7)
    for k in range(steps):
        a, b, c = QUINTIC[k % len(QUINTIC)]
        A = x @ x.T
        B = b * A + c * (A @ A)
        x = a * x + B @ x
    return x.T if tall else x


class Muon:
    """groups: lists of parameters whose row-concatenation is one orthogonalized matrix (one parameter each,
    or [gate, up])."""

    def __init__(self, groups, lr, weight_decay, momentum=0.9, nesterov=False, extra_scale=1.0, steps=5):
        self.groups, self.lr, self.wd = groups, lr, weight_decay
        self.momentum, self.nesterov, self.extra, self.steps = momentum, nesterov, extra_scale, steps
        self.buf = [torch.zeros(sum(p.shape[0] for p in g), g[0].shape[1]) for g in groups]

    @torch.no_grad()
    def step(self):
        for g, buf in zip(self.groups, self.buf):
            grad = torch.cat([p.grad for p in g], dim=0)
            for p in g:
                p.mul_(1.0 - self.lr * self.wd)
            buf.lerp_(grad, 1.0 - self.momentum)
            u = grad.lerp(buf, self.momentum) if self.nesterov else buf
            out, inp = u.shape
            o = newton_schulz(u, self.steps) * (max(out, inp) ** 0.5) * self.extra
            at = 0
            for p in g:
                p.add_(o[at:at + p.shape[0]], alpha=-self.lr)
                at += p.shape[0]


def llama_muon_groups(m):
    """Megatron's Muon matrices of a transformers Llama-layout model: q, k, v, o, [gate; up], down per layer."""
    groups = []
    for layer in m.model.layers:
        a, f = layer.self_attn, layer.mlp
        groups += [[a.q_proj.weight], [a.k_proj.weight], [a.v_proj.weight], [a.o_proj.weight],
                   [f.gate_proj.weight, f.up_proj.weight], [f.down_proj.weight]]
    return groups
