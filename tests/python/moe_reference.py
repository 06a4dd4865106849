#!/usr/bin/env python3
"""Independent numpy / transformers reference for gptrain's mixture-of-experts ops (kernels/moe/).

Usage: moe_reference.py OUT.json
Writes random cases with their expected results for the hidden Catch2 test "[.moe_reference]"
(tests/unit/kernels/test_cpu_moe_reference.cpp):
  router     logits -> probs, experts, scores for every score function / pre-softmax order, written from
             Megatron's definitions (top-k of logits then softmax over k; top-k of softmax over all E;
             sigmoid top-k normalised over k; scores for the aux loss).
  choice     the same with what changes the choice only (Megatron's topk_routing_with_score_function and
             group_limited_topk): an expert bias added to the sigmoid scores for the top-k, and group-limited
             routing (the groups whose top-(K / group_topk) choice scores sum highest, then the top-k among
             their experts), alone and together. Cases are drawn so that the choice differs from the plain
             top-k and no near-tie decides it.
  dispatch   routing -> dest_row and segment_rows: Megatron's token dropping written with dense
             [tokens, experts] masks (capacity = ceil(N*K/E * factor); no dropping when capacity > N;
             probs: the capacity highest probabilities per expert column; position: the first tokens;
             padding: the expert's whole capacity mask), then its permute order (expert-major, tokens in
             order). Ties in torch.topk are unspecified; here (and in gptrain) they go to the earlier token.
  balance    Megatron's switch_load_balancing_loss_func literally, and seq_aux_loss through Megatron's
             reshape of [S, B] tokens to (S, B*E) divided by B; z-loss.
  sinkhorn   Megatron's sinkhorn routing: training chooses the top-k of sinkhorn(logits) (d0 / d1 rescaling
             of exp(logits) until the mean change of d1 is < 1e-4, eps 1e-8), evaluation the top-k of the
             logits; probs = sigmoid of the chosen logits (top-1) or softmax over all experts at them.
             Cases are skewed so that the Sinkhorn choice differs from the plain top-k.
  mixtral    transformers' MixtralSparseMoeBlock on a tiny random module: its router logits and its dense
             routing weights (each expert replaced by a one-hot of its index, so the block's output row is
             the token's routing weights over experts), and transformers' load_balancing_loss_func.
"""
import json
import math
import sys

import numpy as np


def softmax(x):
    m = x.max(axis=-1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=-1, keepdims=True)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def topk(x, k):
    """Indices of the k largest per row, decreasing; ties to the lower index (a stable sort of -x)."""
    return np.argsort(-x, axis=-1, kind="stable")[:, :k]


def group_limited_topk(scores, k, num_groups, group_topk):
    """Megatron's group_limited_topk: the groups whose top-(k // group_topk) scores sum highest, then the
    top-k of the scores with the other groups' experts masked to -inf."""
    n, e = scores.shape
    grouped = scores.reshape(n, num_groups, e // num_groups)
    group_scores = -np.sort(-grouped, axis=-1)[:, :, : k // group_topk].sum(axis=-1)
    chosen = topk(group_scores, group_topk)
    mask = np.zeros((n, num_groups), dtype=bool)
    mask[np.arange(n)[:, None], chosen] = True
    masked = np.where(np.repeat(mask, e // num_groups, axis=1), scores, -np.inf)
    return topk(masked, k)


def choose(values, k, groups):
    return topk(values, k) if groups is None else group_limited_topk(values, k, *groups)


def route(logits, k, score, pre_softmax, bias=None, groups=None, exact=False):
    """exact: the choice from float64 values (to find near-ties), otherwise from float32 ones as gptrain."""
    l = logits.astype(np.float32).astype(np.float64)
    l32 = l if exact else logits.astype(np.float32)
    rows = np.arange(l.shape[0])[:, None]
    if score == "softmax":
        scores = softmax(l)
        if pre_softmax:
            idx = choose(softmax(l32) if exact else softmax(l32).astype(np.float32), k, groups)
            probs = scores[rows, idx]
        else:
            idx = choose(l32, k, groups)
            probs = softmax(l[rows, idx])
    else:
        s = sigmoid(l)
        scores = s / (s.sum(axis=-1, keepdims=True) + 1e-20)
        idx = choose(sigmoid(l32) + (0 if bias is None else bias), k, groups)
        top = s[rows, idx]
        probs = top / (top.sum(axis=-1, keepdims=True) + 1e-20) if k > 1 else top
    return probs, idx, scores


def sinkhorn(logits, tol=1e-4):
    """Megatron's sinkhorn (moe_utils.py), in float64: the balanced matrix d1 * exp(l) * d0."""
    cost = np.exp(logits.astype(np.float64))
    d0 = np.ones(cost.shape[0])
    d1 = np.ones(cost.shape[1])
    error, d1_old = 1e9, d1
    while error > tol:
        d0 = (1 / d0.size) * 1 / ((d1 * cost).sum(axis=1) + 1e-8)
        d1 = (1 / d1.size) * 1 / ((d0[:, None] * cost).sum(axis=0) + 1e-8)
        error = np.abs(d1_old - d1).mean()
        d1_old = d1
    return d1 * cost * d0[:, None]


def sinkhorn_route(logits, k, train):
    l = logits.astype(np.float64)
    rows = np.arange(l.shape[0])[:, None]
    choice = sinkhorn(l) if train else l
    idx = topk(choice, k)
    act = sigmoid(l) if k == 1 else softmax(l)
    # The reference stands only where the k-th and (k+1)-th choice are clearly apart (no near-ties that
    # float32 iteration could flip).
    ordered = np.sort(choice, axis=-1)[:, ::-1]
    scale = np.abs(ordered[:, :1]) + 1e-30
    margin = float(((ordered[:, k - 1] - ordered[:, k]) / scale).min()) if k < l.shape[1] else 1.0
    return act[rows, idx], idx, margin


def dispatch(experts, probs, n_experts, capacity_factor, policy, pad):
    n, k = experts.shape
    dense_map = np.zeros((n, n_experts), dtype=bool)
    dense_probs = np.zeros((n, n_experts))
    rows = np.arange(n)[:, None]
    dense_map[rows, experts] = True
    dense_probs[rows, experts] = probs
    if capacity_factor is None:
        final = dense_map
        capacity = -1
    else:
        capacity = math.ceil((n * k / n_experts) * capacity_factor)
        if capacity > n:
            mask = np.ones_like(dense_map)
        else:
            key = -dense_probs if policy == "probs" else -dense_map.astype(np.int64)
            chosen = np.argsort(key, axis=0, kind="stable")[:capacity]  # (capacity, E)
            mask = np.zeros_like(dense_map)
            mask[chosen, np.arange(n_experts)[None, :]] = True
        final = mask if pad else (dense_map & mask)
    # Permute order: expert-major, tokens in order; padded positions are rows with no kept choice.
    dest = -np.ones((n, k), dtype=np.int64)
    seg = []
    row = 0
    for e in range(n_experts):
        tokens = np.nonzero(final[:, e])[0]
        seg.append(len(tokens))
        kept = [t for t in tokens if dense_map[t, e]]
        if pad:
            kept_rows = {t: row + j for j, t in enumerate(kept)}
        else:
            kept_rows = {t: row + j for j, t in enumerate(tokens)}
        for t, r in kept_rows.items():
            dest[t, list(experts[t]).index(e)] = r
        row += len(tokens)
    return capacity, dest, seg


def switch_loss(probs, tokens_per_expert, total_tokens, k, n_experts, coeff):
    return float(np.sum(probs.sum(axis=0) * tokens_per_expert) * (n_experts * coeff / (k * total_tokens * total_tokens)))


def balance_loss(scores, experts, n_experts, k, seqs, coeff):
    n = scores.shape[0]
    dense_map = np.zeros((n, n_experts))
    dense_map[np.arange(n)[:, None], experts] = 1
    if seqs == 1:
        return switch_loss(scores, dense_map.sum(axis=0), n, k, n_experts, coeff)
    s = n // seqs
    # gptrain's tokens are (B, S); Megatron's are (S, B): reorder, then Megatron's seq_aux_loss.
    sb_scores = scores.reshape(seqs, s, n_experts).transpose(1, 0, 2).reshape(s, -1)
    sb_map = dense_map.reshape(seqs, s, n_experts).transpose(1, 0, 2).reshape(s, -1)
    return switch_loss(sb_scores, sb_map.sum(axis=0), s, k, n_experts, coeff) / seqs


def z_loss(logits, coeff):
    m = logits.max(axis=-1)
    lse = m + np.log(np.exp(logits - m[:, None]).sum(axis=-1))
    return float(np.mean(lse ** 2) * coeff)


def mixtral_case(rng):
    import torch
    from transformers import MixtralConfig
    from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock, load_balancing_loss_func

    n_experts, k, hidden, tokens = 8, 2, 16, 24
    torch.manual_seed(int(rng.integers(1 << 30)))
    cfg = MixtralConfig(hidden_size=hidden, intermediate_size=8, num_local_experts=n_experts, num_experts_per_tok=k)
    block = MixtralSparseMoeBlock(cfg).eval()

    class OneHot(torch.nn.Module):
        def __init__(self, e):
            super().__init__()
            self.e = e

        def forward(self, x):
            out = torch.zeros(x.shape[0], hidden, dtype=x.dtype)
            out[:, self.e] = 1.0
            return out

    block.experts = torch.nn.ModuleList([OneHot(e) for e in range(n_experts)])
    x = torch.randn(1, tokens, hidden)
    with torch.no_grad():
        out, logits = block(x)
        aux = load_balancing_loss_func((logits,), n_experts, k)
    return {"N": tokens, "E": n_experts, "K": k, "logits": logits.numpy().ravel().tolist(),
            "weights": out.reshape(-1, hidden)[:, :n_experts].numpy().ravel().tolist(), "hf_aux_loss": float(aux)}


def spaced_logits(rng, n, e):
    """Rows whose values are at least 0.05 apart (no near-ties for top-k), scaled around 0."""
    return np.stack([rng.permutation(e) * 0.37 - 0.15 * e + rng.uniform(0, 0.05, e) for _ in range(n)])


def main():
    rng = np.random.default_rng(20261125)
    out = {"router": [], "dispatch": [], "balance": [], "z_loss": []}
    for score in ("softmax", "sigmoid"):
        for pre in (False, True):
            for n, e, k in ((13, 8, 2), (7, 6, 1), (9, 16, 4)):
                logits = rng.normal(0, 2, (n, e)).astype(np.float32)
                probs, idx, scores = route(logits, k, score, pre)
                out["router"].append({"N": n, "E": e, "K": k, "score": score, "pre_softmax": pre,
                                      "logits": logits.ravel().tolist(), "probs": probs.ravel().tolist(),
                                      "experts": idx.ravel().tolist(), "scores": scores.ravel().tolist()})
    out["choice"] = []
    for score, pre, n, e, k, with_bias, groups in (
            ("sigmoid", False, 12, 8, 2, True, None), ("sigmoid", False, 9, 16, 4, True, None),
            ("sigmoid", False, 11, 6, 1, True, None), ("softmax", False, 10, 8, 2, False, (4, 1)),
            ("softmax", True, 10, 12, 3, False, (3, 1)), ("sigmoid", False, 12, 16, 4, False, (4, 2)),
            ("sigmoid", False, 12, 16, 4, True, (8, 4)), ("sigmoid", False, 9, 8, 3, True, (2, 1))):
        while True:
            logits = rng.normal(0, 2, (n, e)).astype(np.float32)
            bias = rng.normal(0, 0.3, e).astype(np.float32) if with_bias else None
            probs, idx, scores = route(logits, k, score, pre, bias, groups)
            # The float64 choice must be the float32 one (no near-tie), and the bias or groups must matter.
            _, idx64, _ = route(logits, k, score, pre, bias, groups, exact=True)
            plain = route(logits, k, score, pre)[1]
            if (idx64 == idx).all() and not (np.sort(plain, axis=1) == np.sort(idx, axis=1)).all():
                break
        out["choice"].append({"N": n, "E": e, "K": k, "score": score, "pre_softmax": pre,
                              "expert_bias": None if bias is None else bias.tolist(),
                              "num_groups": groups[0] if groups else 0, "group_topk": groups[1] if groups else 0,
                              "logits": logits.ravel().tolist(), "probs": probs.ravel().tolist(),
                              "experts": idx.ravel().tolist(), "scores": scores.ravel().tolist()})
    for n, e, k, factor, policy, pad in ((32, 4, 2, None, "probs", False), (32, 4, 2, 1.0, "probs", False),
                                         (32, 4, 2, 1.0, "position", False), (30, 8, 2, 0.5, "probs", True),
                                         (30, 8, 2, 0.5, "position", True), (12, 4, 1, 0.7, "probs", False),
                                         (12, 4, 1, 0.7, "position", True), (6, 4, 2, 3.0, "probs", True),
                                         (40, 8, 3, 1.25, "probs", False)):
        # Skewed logits so that some experts are over capacity.
        logits = (rng.normal(0, 1, (n, e)) + np.linspace(1.5, -1.5, e)).astype(np.float32)
        probs, idx, _ = route(logits, k, "softmax", False)
        capacity, dest, seg = dispatch(idx, probs, e, factor, policy, pad)
        out["dispatch"].append({"N": n, "E": e, "K": k, "capacity_factor": factor, "capacity": capacity,
                                "policy": policy, "pad": pad, "experts": idx.ravel().tolist(),
                                "probs": probs.astype(np.float32).ravel().tolist(),
                                "dest_row": dest.ravel().tolist(), "segment_rows": seg,
                                "dropped": int((dest < 0).sum())})
    for n, e, k, seqs, score in ((24, 8, 2, 1, "softmax"), (24, 8, 2, 3, "softmax"), (20, 4, 1, 4, "sigmoid"),
                                 (18, 6, 3, 2, "sigmoid")):
        logits = rng.normal(0, 1.5, (n, e)).astype(np.float32)
        _, idx, scores = route(logits, k, score, False)
        coeff = 0.01
        out["balance"].append({"N": n, "E": e, "K": k, "seqs": seqs, "coeff": coeff, "score": score,
                               "logits": logits.ravel().tolist(),
                               "loss": balance_loss(scores, idx, e, k, seqs, coeff)})
    for n, e in ((10, 8), (33, 5)):
        logits = rng.normal(0, 3, (n, e)).astype(np.float32)
        out["z_loss"].append({"N": n, "E": e, "coeff": 1e-3, "logits": logits.ravel().tolist(),
                              "loss": z_loss(logits.astype(np.float64), 1e-3)})
    out["mixtral"] = mixtral_case(rng)
    out["sinkhorn"] = []
    for n, e, k, train in ((16, 4, 1, True), (24, 8, 2, True), (40, 6, 3, True), (16, 4, 1, False),
                           (24, 8, 2, False)):
        while True:
            # A strong per-expert skew: the plain top-k would crowd the first experts, Sinkhorn spreads them.
            logits = (rng.normal(0, 1, (n, e)) + np.linspace(2.0, -2.0, e)).astype(np.float32)
            probs, idx, margin = sinkhorn_route(logits, k, train)
            if margin > 1e-3:
                break
        out["sinkhorn"].append({"N": n, "E": e, "K": k, "train": train, "logits": logits.ravel().tolist(),
                                "probs": probs.ravel().tolist(), "experts": idx.ravel().tolist(),
                                "plain_experts": topk(logits, k).ravel().tolist()})
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
