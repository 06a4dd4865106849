#!/usr/bin/env python3
"""Independent plain-Python reference for Megatron's LR / weight-decay schedule (gptrain's
core/schedule/lr_schedule), written from the formulas in docs/megatron-compat.md §3.4.

Usage: lr_schedule_ref.py OUT.json
Writes {"cases": [{"name", "flags", "rejected", "points": [[samples, lr, wd, decoupled_lr], ...]}]} for the
hidden Catch2 test "[.lr_reference]" to compare against. Flags use Megatron's names (underscores).
decoupled_lr is the LR of the --decoupled-lr group (input embedding and output layer): the same warmup
(from lr_warmup_init) and decay shape between decoupled_lr and decoupled_min_lr (default min_lr); without
decoupled_lr it is the default group's LR."""
import json
import math
import random
import sys


class Rejected(Exception):
    pass


def need(cond, why):
    if not cond:
        raise Rejected(why)


def schedule_from_flags(f):
    """Megatron's conversion of flags to a sample-counted schedule, with its validity rules."""
    iters, samples = f.get("train_iters"), f.get("train_samples")
    need((iters is None) != (samples is None), "one of train_iters / train_samples")
    need(f.get("lr") is not None, "lr required")
    gbs = f["global_batch_size"]
    need(gbs > 0, "gbs")
    peak, floor, init = f["lr"], f.get("min_lr", 0.0), f.get("lr_warmup_init", 0.0)
    need(floor >= 0 and peak >= floor and init <= peak, "lr ordering")
    # The decoupled group's bounds are not checked against each other or the warmup start (Megatron
    # runs such schedules); only negative values are refused.
    dpeak = f.get("decoupled_lr")
    dfloor = f.get("decoupled_min_lr")
    need(dpeak is None or dpeak >= 0, "decoupled_lr >= 0")
    need(dfloor is None or dfloor >= 0, "decoupled_min_lr >= 0")
    if dpeak is None:
        dpeak, dfloor = peak, floor  # one group: the decoupled LR is the default one
    elif dfloor is None:
        dfloor = floor
    frac = f.get("lr_warmup_fraction")
    if iters is not None:
        need(f.get("lr_decay_samples") is None and f.get("lr_warmup_samples", 0) == 0
             and f.get("lr_wsd_decay_samples") is None, "sample flags in iteration mode")
        horizon = (f.get("lr_decay_iters") or iters) * gbs
        wsd = None if f.get("lr_wsd_decay_iters") is None else f["lr_wsd_decay_iters"] * gbs
        warm_given = f.get("lr_warmup_iters", 0)
        warm = warm_given * gbs
        wd_len = iters * gbs
    else:
        need(f.get("lr_decay_iters") is None and f.get("lr_warmup_iters", 0) == 0
             and f.get("lr_wsd_decay_iters") is None, "iteration flags in sample mode")
        horizon = f.get("lr_decay_samples") or samples
        wsd = f.get("lr_wsd_decay_samples")
        warm_given = f.get("lr_warmup_samples", 0)
        warm = warm_given
        wd_len = samples
    if frac is not None:
        need(warm_given == 0, "fraction and explicit warmup")
        warm = frac * horizon
    need(horizon > 0, "decay horizon > 0")
    need(warm < horizon, "warmup shorter than decay")
    style = f.get("lr_decay_style", "linear")
    need(style in ("constant", "linear", "cosine", "inverse-square-root", "WSD"), "style")
    anneal = f.get("lr_wsd_decay_style", "exponential")
    need(anneal in ("exponential", "linear", "cosine", "minus_sqrt"), "wsd style")
    if style == "WSD":
        need(wsd is not None and wsd >= 0, "WSD needs its anneal length")
    else:
        need(wsd is None, "WSD length without WSD")
    wd_style = f.get("weight_decay_incr_style", "constant")
    need(wd_style in ("constant", "linear", "cosine"), "wd style")
    if wd_style == "constant":
        need(f.get("start_weight_decay") is None and f.get("end_weight_decay") is None, "wd endpoints")
        wd0 = wd1 = f.get("weight_decay", 0.01)
    else:
        need(f.get("start_weight_decay") is not None and f.get("end_weight_decay") is not None, "wd endpoints")
        wd0, wd1 = f["start_weight_decay"], f["end_weight_decay"]
    need(wd0 >= 0 and wd1 >= wd0, "wd ordering")
    return dict(peak=peak, floor=floor, dpeak=dpeak, dfloor=dfloor, init=init, warm=warm, horizon=horizon, style=style,
                wsd=wsd, anneal=anneal, wd0=wd0, wd1=wd1, wd_len=wd_len, wd_style=wd_style)


def learning_rate(s, n, decoupled=False):
    peak, floor = (s["dpeak"], s["dfloor"]) if decoupled else (s["peak"], s["floor"])
    if s["warm"] > 0 and n <= s["warm"]:
        t = n / s["warm"]
        return s["init"] * (1 - t) + peak * t
    if s["style"] == "constant":
        return peak
    if n > s["horizon"]:
        return floor
    if s["style"] == "inverse-square-root":
        return max(floor, peak * math.sqrt(max(s["warm"], 1) / max(n, 1)))
    progress = (n - s["warm"]) / (s["horizon"] - s["warm"])
    if s["style"] == "linear":
        c = 1 - progress
    elif s["style"] == "cosine":
        c = (1 + math.cos(math.pi * progress)) / 2
    else:  # WSD: stable at the peak until the last `wsd` samples, then anneal
        begin = s["horizon"] - s["wsd"]
        if n <= begin:
            c = 1.0
        else:
            x = (n - begin) / s["wsd"]
            c = {"linear": 1 - x,
                 "cosine": (1 + math.cos(math.pi * x)) / 2,
                 "exponential": 2 * 0.5 ** x - 1,
                 "minus_sqrt": 1 - math.sqrt(x)}[s["anneal"]]
    return floor + (peak - floor) * c


def weight_decay(s, n):
    if s["wd_style"] == "constant" or n > s["wd_len"]:
        return s["wd1"]
    x = n / s["wd_len"]
    c = x if s["wd_style"] == "linear" else (1 - math.cos(math.pi * x)) / 2
    return s["wd0"] + (s["wd1"] - s["wd0"]) * c


def sample_points(s, gbs, rng):
    """Boundaries of every phase, every iteration on a coarse grid, and random counts."""
    h = s["horizon"]
    marks = {0, 1, h - 1, h, h + 1, h + gbs, 2 * h}
    w = s["warm"]
    for m in (math.floor(w) - 1, math.floor(w), math.floor(w) + 1, math.ceil(w)):
        marks.add(m)
    if s["wsd"] is not None:
        b = h - s["wsd"]
        marks.update({b - 1, b, b + 1})
    marks.update(range(0, h + 2 * gbs, max(gbs, h // 25)))
    marks.update(rng.randrange(0, 2 * h) for _ in range(10))
    return sorted(m for m in marks if m >= 0)


def cases():
    base = dict(train_iters=100, global_batch_size=8, lr=3e-4, min_lr=3e-5, lr_warmup_iters=10)
    yield "linear", dict(base, lr_decay_style="linear")
    yield "cosine", dict(base, lr_decay_style="cosine", lr_decay_iters=80)
    yield "constant", dict(base, lr_decay_style="constant")
    yield "inverse-square-root", dict(base, lr_decay_style="inverse-square-root")
    yield "isr-no-warmup", dict(base, lr_decay_style="inverse-square-root", lr_warmup_iters=0, min_lr=0.0)
    for anneal in ("exponential", "linear", "cosine", "minus_sqrt"):
        yield "wsd-" + anneal, dict(base, lr_decay_style="WSD", lr_wsd_decay_iters=25, lr_wsd_decay_style=anneal)
    yield "warmup-fraction", dict(base, lr_decay_style="cosine", lr_warmup_iters=0, lr_warmup_fraction=0.07)
    yield "warmup-init", dict(base, lr_decay_style="linear", lr_warmup_init=1e-5)
    yield "samples-cosine", dict(train_samples=5000, global_batch_size=12, lr=6e-4, min_lr=6e-5,
                                 lr_warmup_samples=375, lr_decay_style="cosine", lr_decay_samples=4800)
    yield "samples-wsd", dict(train_samples=5000, global_batch_size=12, lr=6e-4, lr_warmup_samples=100,
                              lr_decay_style="WSD", lr_wsd_decay_samples=1000, lr_wsd_decay_style="minus_sqrt")
    yield "wd-linear", dict(base, lr_decay_style="cosine", weight_decay_incr_style="linear",
                            start_weight_decay=0.01, end_weight_decay=0.1)
    yield "wd-cosine", dict(base, lr_decay_style="linear", weight_decay_incr_style="cosine",
                            start_weight_decay=0.0, end_weight_decay=0.05, weight_decay=0.3)
    yield "no-warmup-linear", dict(base, lr_decay_style="linear", lr_warmup_iters=0)
    # --decoupled-lr: the embedding/output group's own peak and floor on the same shape.
    yield "decoupled-linear", dict(base, lr_decay_style="linear", decoupled_lr=1e-3, decoupled_min_lr=1e-4)
    yield "decoupled-cosine-default-floor", dict(base, lr_decay_style="cosine", lr_decay_iters=80, decoupled_lr=5e-5)
    yield "decoupled-constant", dict(base, lr_decay_style="constant", decoupled_lr=7e-4)
    yield "decoupled-isr", dict(base, lr_decay_style="inverse-square-root", decoupled_lr=2e-3, decoupled_min_lr=0.0)
    yield "decoupled-wsd", dict(base, lr_decay_style="WSD", lr_wsd_decay_iters=25, lr_wsd_decay_style="cosine",
                                decoupled_lr=9e-4, decoupled_min_lr=1e-6)
    yield "decoupled-warmup-init-above-peak", dict(base, lr_decay_style="linear", lr_warmup_init=1e-4,
                                                   decoupled_lr=5e-5, decoupled_min_lr=0.0)
    yield "decoupled-floor-above-peak", dict(base, lr_decay_style="linear", decoupled_lr=1e-5)
    yield "decoupled-samples-cosine", dict(train_samples=5000, global_batch_size=12, lr=6e-4, min_lr=6e-5,
                                           lr_warmup_samples=375, lr_decay_style="cosine", decoupled_lr=3e-3,
                                           decoupled_min_lr=3e-6)
    yield "decoupled-min-alone", dict(base, lr_decay_style="cosine", decoupled_min_lr=1e-6)
    yield "bad-decoupled-negative", dict(base, decoupled_lr=-1e-3)
    yield "bad-decoupled-min-negative", dict(base, decoupled_lr=1e-3, decoupled_min_lr=-1e-5)
    # Megatron refuses these.
    yield "bad-warmup-too-long", dict(base, lr_warmup_iters=100)
    yield "bad-both-lengths", dict(base, train_samples=800)
    yield "bad-wsd-without-length", dict(base, lr_decay_style="WSD")
    yield "bad-fraction-and-iters", dict(base, lr_warmup_fraction=0.1)
    yield "bad-min-above-peak", dict(base, min_lr=1e-3)
    yield "bad-wd-endpoints-constant", dict(base, start_weight_decay=0.1, end_weight_decay=0.1)
    yield "bad-wd-decreasing", dict(base, weight_decay_incr_style="linear", start_weight_decay=0.1,
                                    end_weight_decay=0.0)
    yield "bad-sample-flag-in-iter-mode", dict(base, lr_decay_samples=400)


def main():
    rng = random.Random(1234)
    out = []
    for name, flags in cases():
        entry = {"name": name, "flags": flags, "rejected": False, "points": []}
        try:
            s = schedule_from_flags(flags)
        except Rejected as e:
            entry["rejected"] = True
            entry["why"] = str(e)
        else:
            for n in sample_points(s, flags["global_batch_size"], rng):
                entry["points"].append([n, learning_rate(s, n), weight_decay(s, n), learning_rate(s, n, True)])
        out.append(entry)
    with open(sys.argv[1], "w") as fh:
        json.dump({"cases": out}, fh, indent=1)
    npts = sum(len(c["points"]) for c in out)
    print(f"lr reference: {len(out)} cases, {npts} points -> {sys.argv[1]}")


if __name__ == "__main__":
    main()
