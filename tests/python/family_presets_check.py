"""Checks the example configurations in scripts/presets/ (*.yaml for pretrain_gpt --config):

  1. every file opens with a header comment naming where its shape comes from ("Shape:");
  2. pretrain_gpt accepts it and trains 2 iterations on mock data with the architecture switches of the
     preset (norm, positions, rotary fraction/convention/base, SwiGLU, GQA, biases, parallel residual,
     GELU variant, untied head, output bias) and only the sizes shrunk on the command line (layers,
     width, heads, ffn, sequence, batch), so CI never allocates the real model;
  3. the checkpoint's recorded args hold exactly the preset's values for every key that was not
     overridden (the YAML parsed as written), and the fresh loss is ~ ln(vocab);
  4. the reduced model's parameter count (summed from the checkpoint) equals that of the transformers
     model of the same architecture (so biases, GQA widths, SwiGLU, untied head really took effect);
  5. the full-size shape is consistent (heads divide the width, query groups divide the heads, even
     rotary dims, ...) and its parameter count, from transformers on the meta device (no memory), is
     printed so it can be compared with the source model's.
Exits non-zero naming the preset and the broken property."""
import argparse
import json
import math
import os
import subprocess
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
import torch  # noqa: E402
import transformers  # noqa: E402
import yaml  # noqa: E402

VOCAB = 50257  # GPT-2 BPE, the tokenizer every preset names

# Sizes the CI run shrinks to; the switches stay as the preset has them. 8 heads of 8 dims: every
# preset's query-group count (4 or 8) divides 8 and every rotary fraction leaves an even number of dims.
SMALL = {"num-layers": "2", "hidden-size": "64", "num-attention-heads": "8", "ffn-hidden-size": "96",
         "seq-length": "32", "max-position-embeddings": "32", "micro-batch-size": "2", "global-batch-size": "2",
         "train-iters": "2"}
RUN = {"lr-warmup-iters": "0", "lr-decay-iters": None, "eval-iters": "0", "log-interval": "1"}


def key(k):
    return k.replace("_", "-")


def hf_param_count(p):
    """Parameters of the transformers model with the preset's full shape (meta device, no memory),
    with the vocabulary padded as gptrain pads it (so embedding rows match)."""
    div = int(p.get("make-vocab-size-divisible-by", 128))
    padded = -(-VOCAB // div) * div
    L, C, NH = int(p["num-layers"]), int(p["hidden-size"]), int(p["num-attention-heads"])
    F = int(p.get("ffn-hidden-size", 4 * C))
    P = int(p.get("max-position-embeddings", p["seq-length"]))
    rope = p.get("position-embedding-type", "learned_absolute") == "rope"
    res = p.get("parallel-residual", "none")
    rms = p.get("normalization", "LayerNorm") == "RMSNorm"
    untied = bool(p.get("untie-embeddings-and-output-weights", False))
    if rms and p.get("swiglu") and rope:
        groups = int(p["num-query-groups"]) if p.get("group-query-attention") else NH
        cfg = transformers.LlamaConfig(vocab_size=padded, hidden_size=C, intermediate_size=F, num_hidden_layers=L,
                                       num_attention_heads=NH, num_key_value_heads=groups, max_position_embeddings=P,
                                       tie_word_embeddings=not untied, attention_bias=False, mlp_bias=False)
    elif res == "two_norms" and rope:
        cfg = transformers.GPTNeoXConfig(vocab_size=padded, hidden_size=C, num_hidden_layers=L, num_attention_heads=NH,
                                         intermediate_size=F, rotary_pct=float(p.get("rotary-percent", 1.0)),
                                         max_position_embeddings=P, use_parallel_residual=True,
                                         tie_word_embeddings=not untied)
    elif res == "shared_norm" and rope:
        cfg = transformers.GPTJConfig(vocab_size=padded, n_positions=P, n_embd=C, n_layer=L, n_head=NH, n_inner=F,
                                      rotary_dim=int(C // NH * float(p.get("rotary-percent", 1.0))),
                                      tie_word_embeddings=not untied)
    elif res == "none" and not rope and not rms:
        cfg = transformers.GPT2Config(vocab_size=padded, n_positions=P, n_embd=C, n_layer=L, n_head=NH, n_inner=F,
                                      tie_word_embeddings=not untied)
    else:
        return None, None
    with _meta():
        m = transformers.AutoModelForCausalLM.from_config(cfg)
    n = sum(t.numel() for t in m.parameters())
    if res == "shared_norm" and not p.get("disable-bias-linear"):
        n += L * 4 * C  # gptrain keeps q/k/v/out biases where GPT-J has none (see the preset's note)
    if res == "shared_norm" and not p.get("output-layer-bias"):
        n -= padded
    return n, cfg.model_type


class _meta:
    """torch 1.13 has no `with torch.device("meta")`: every parameter is moved to the meta device as
    it is registered, before any initializer writes to it (torch.empty's pages are never touched)."""
    def __enter__(self):
        self._old = torch.nn.Module.register_parameter

        def reg(mod, name, param):
            if param is not None and not param.is_meta:
                param = torch.nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
            self._old(mod, name, param)
        torch.nn.Module.register_parameter = reg
        return self

    def __exit__(self, *exc):
        torch.nn.Module.register_parameter = self._old


def checkpoint_numel(d):
    """Elements of every tensor in the model safetensors files of a checkpoint (header only)."""
    n = 0
    for f in os.listdir(d):
        if f.startswith("model_") and f.endswith(".safetensors"):
            with open(os.path.join(d, f), "rb") as fh:
                hlen = int.from_bytes(fh.read(8), "little")
                header = json.loads(fh.read(hlen))
            n += sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
    return n


def shape_problems(p):
    C, NH = int(p["hidden-size"]), int(p["num-attention-heads"])
    out = []
    if "kv-channels" not in p and C % NH:
        out.append(f"hidden-size {C} is not divisible by num-attention-heads {NH}")
    hs = int(p.get("kv-channels", C // NH))
    if p.get("group-query-attention") and NH % int(p["num-query-groups"]):
        out.append(f"num-query-groups {p['num-query-groups']} does not divide num-attention-heads {NH}")
    if p.get("position-embedding-type") == "rope" and int(hs * float(p.get("rotary-percent", 1.0))) % 2:
        out.append(f"rotary dims {hs} x {p.get('rotary-percent')} are odd")
    if int(p.get("max-position-embeddings", p["seq-length"])) < int(p["seq-length"]):
        out.append("max-position-embeddings < seq-length")
    if int(p["global-batch-size"]) % int(p["micro-batch-size"]):
        out.append("global-batch-size is not a multiple of micro-batch-size")
    return out


def same(recorded, written):
    if isinstance(written, bool) or isinstance(recorded, bool):
        return bool(recorded) == bool(written)
    if isinstance(written, (int, float)) and isinstance(recorded, (int, float)):
        return math.isclose(float(recorded), float(written), rel_tol=1e-12, abs_tol=0.0)
    if isinstance(recorded, (int, float)):
        try:
            return math.isclose(float(recorded), float(written), rel_tol=1e-12)
        except ValueError:
            return False
    return str(recorded).replace(" ", "") == str(written).replace(" ", "")


def check(path, a, failures):
    name = os.path.basename(path)
    text = open(path).read()
    head = text.split("\n\n")[0]
    if not text.startswith("#") or "Shape:" not in head:
        failures.append(f"{name}: no header comment naming the source of the shape ('# ... Shape: ...')")
    p = {key(k): v for k, v in (yaml.safe_load(text) or {}).items()}
    for prob in shape_problems(p):
        failures.append(f"{name}: {prob}")
    n, mt = hf_param_count(p)
    if n is None:
        failures.append(f"{name}: no transformers architecture matches its switches")

    tmp = os.path.join(a.tmp, name.replace(".yaml", ""))
    os.makedirs(tmp)
    args = [os.path.join(a.bin, "pretrain_gpt"), "--config", path]
    over = dict(SMALL)
    for k, v in RUN.items():
        if v is None:
            if k in p:
                over[k] = str(SMALL["train-iters"])
        else:
            over[k] = v
    if p.get("lr-warmup-fraction") is not None:
        del over["lr-warmup-iters"]
    for k, v in over.items():
        args += [f"--{k}", v]
    args += ["--mock-data", "--save", os.path.join(tmp, "ckpt"), "--save-interval", SMALL["train-iters"],
             "--metrics-file", os.path.join(tmp, "metrics.jsonl"), "--device", "cpu"]
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    open(os.path.join(tmp, "pretrain_gpt.log"), "w").write(r.stdout)
    if r.returncode != 0:
        failures.append(f"{name}: pretrain_gpt exited {r.returncode}:\n{r.stdout[-3000:]}")
        return
    meta = json.load(open(os.path.join(tmp, "ckpt", "iter_%07d" % int(SMALL["train-iters"]), "metadata.json")))
    recorded = meta["args"]
    if meta["model"].get("family") != mt:
        failures.append(f"{name}: the checkpoint says family {meta['model'].get('family')!r}, the switches are {mt}'s")
    checked = 0
    for k, v in p.items():
        if k in over or v is None:
            continue
        checked += 1
        rk = k.replace("-", "_")
        if rk not in recorded:
            failures.append(f"{name}: key '{k}' is not among the checkpoint's recorded args")
        elif not same(recorded[rk], v):
            failures.append(f"{name}: '{k}: {v}' was recorded as {recorded[rk]!r}")
    n_small, _ = hf_param_count({**p, **over})
    n_ours = checkpoint_numel(os.path.join(tmp, "ckpt", "iter_%07d" % int(SMALL["train-iters"])))
    if n_small is not None and n_ours != n_small:
        failures.append(f"{name}: the reduced-size gptrain checkpoint holds {n_ours:,} parameters, the same "
                        f"architecture in transformers {n_small:,}: a switch did not take effect")
    losses = [json.loads(ln)["losses"]["lm loss"] for ln in open(os.path.join(tmp, "metrics.jsonl"))
              if json.loads(ln).get("event") == "train"]
    if len(losses) != int(SMALL["train-iters"]) or not all(math.isfinite(x) for x in losses) \
            or abs(losses[0] - math.log(VOCAB)) > 1.0:
        failures.append(f"{name}: losses {losses}: expected {SMALL['train-iters']} finite values, "
                        f"the first ~ ln({VOCAB})")
    print(f"ok: {name}: {checked} of {len(p)} keys recorded as written (the rest overridden), family {mt}; "
          f"reduced size: {n_ours:,} parameters = transformers {mt}'s; 2 iterations, first loss {losses[0]:.4f}; "
          f"full shape: {n:,} parameters")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tmp", required=True)
    a = ap.parse_args()
    files = sorted(f for f in os.listdir(a.presets) if f.endswith(".yaml"))
    want = {"gpt2-124m", "gpt2-350m", "gpt2-1.5b", "pythia-160m", "gptj-6b", "neox-20b", "llama-1b", "llama-8b"}
    have = {f[:-5] for f in files}
    failures = []
    if not want <= have:
        failures.append(f"missing presets: {sorted(want - have)}")
    for f in files:
        check(os.path.join(a.presets, f), a, failures)
    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
