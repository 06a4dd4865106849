"""Helpers shared by the convert_* reference tests: running gptrain binaries and comparing
safetensors weight sets with the `safetensors` package (the reference reader)."""
import argparse
import json
import os
import subprocess
import sys

from safetensors import safe_open


def convert_argparser(tokenizer=False, tol_only=False):
    """The arguments the convert_* tests share: --bin (build/bin) and --tmp (scratch folder); with
    tokenizer, --vocab / --merges (GPT-2 BPE files); with tol_only, --tol (max abs logit diff) and
    --only (comma-separated model names, empty = all). Returns the parser, for test-specific flags."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tmp", required=True)
    if tokenizer:
        ap.add_argument("--vocab", required=True)
        ap.add_argument("--merges", required=True)
    if tol_only:
        ap.add_argument("--tol", type=float, default=1e-4)
        ap.add_argument("--only", default="")
    return ap


def run(args, expect_ok=True):
    """Runs a gptrain binary; returns (returncode, combined output). Fails loudly on surprise."""
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if expect_ok and p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)} exited {p.returncode}:\n{p.stdout}")
    if not expect_ok and p.returncode == 0:
        sys.exit(f"FAIL: {' '.join(args)} succeeded but should have failed:\n{p.stdout}")
    return p.returncode, p.stdout


def load_weight_set(d):
    """name -> torch tensor for model.safetensors or an index + shards, read with safe_open."""
    index = os.path.join(d, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    out = {}
    for f in files:
        with safe_open(os.path.join(d, f), framework="pt") as sf:
            assert sf.metadata().get("format") == "pt", f"{f}: __metadata__.format is {sf.metadata()}"
            for k in sf.keys():
                out[k] = sf.get_tensor(k)
    return out


def latest_iteration_dir(ck):
    """The iter_NNNNNNN folder that a checkpoint directory's tracker file names."""
    step = open(os.path.join(ck, "latest_checkpointed_iteration.txt")).read().strip()
    return os.path.join(ck, f"iter_{int(step):07d}")


def global_tensors(files):
    """name -> the global torch tensor, reassembled from gptrain rank files (model_* or optim_*
    safetensors of one checkpoint) by their slice metadata ({"global_shape", "blocks"}: TP blocks,
    expert-parallel dim-0 slices, and both for experts also split over their ffn width), independently of
    gptrain's loader. Fails if the files leave an element of a tensor uncovered."""
    import torch
    full = {}
    for f in files:
        with safe_open(f, framework="pt") as sf:
            md = sf.metadata() or {}
            for k in sf.keys():
                x = sf.get_tensor(k)
                if k not in md:  # whole tensor (replicated over TP, or owned by one stage)
                    full.setdefault(k, x)
                    continue
                s = json.loads(md[k])
                g = full.setdefault(k, torch.full(s["global_shape"], float("nan")))
                # Per dim, the global index of each local position (the blocks of a dim in order; a dim
                # without blocks is whole): the local tensor is the product of these ranges.
                index = {}
                for dim, off, ln in s["blocks"]:
                    index.setdefault(dim, []).extend(range(off, off + ln))
                for dim, idx in index.items():
                    assert len(idx) == x.shape[dim], f"{f}: {k}: blocks do not fill dim {dim} of the local tensor"
                sel = [torch.tensor(index[d]) if d in index else torch.arange(g.shape[d]) for d in range(g.dim())]
                g[torch.meshgrid(*sel, indexing="ij")] = x
    for k, v in full.items():
        assert not torch.isnan(v).any(), f"{k}: the rank files do not cover the whole tensor"
    return full


def assert_identical(a, b, what):
    if set(a) != set(b):
        sys.exit(f"FAIL: {what}: tensor names differ: only in first {sorted(set(a) - set(b))[:5]}, "
                 f"only in second {sorted(set(b) - set(a))[:5]}")
    for k in sorted(a):
        x, y = a[k], b[k]
        if x.dtype != y.dtype or tuple(x.shape) != tuple(y.shape):
            sys.exit(f"FAIL: {what}: {k}: {x.dtype}{tuple(x.shape)} vs {y.dtype}{tuple(y.shape)}")
        if not bool((x.view(-1).contiguous().view(dtype=_int_view(x.dtype)) ==
                     y.view(-1).contiguous().view(dtype=_int_view(y.dtype))).all()):
            sys.exit(f"FAIL: {what}: {k} differs (max abs diff {(x.float() - y.float()).abs().max().item()})")
    print(f"ok: {what}: {len(a)} tensors bitwise identical")


def _int_view(dt):
    import torch
    return {torch.float32: torch.int32, torch.bfloat16: torch.int16, torch.float16: torch.int16,
            torch.int64: torch.int64, torch.bool: torch.uint8, torch.uint8: torch.uint8}[dt]


def patch_generate_for_debian_torch():
    """transformers' generate() asks whether the model is FSDP-wrapped by importing
    torch.distributed.fsdp, which fails on Debian's torch 1.13 under Python 3.11 (a dataclass
    with a mutable default). None of our models is FSDP-wrapped: answer False without importing."""
    import transformers.generation.utils as gu
    gu.is_fsdp_managed_module = lambda module: False
