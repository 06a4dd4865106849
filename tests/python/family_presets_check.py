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
     rotary dims, ...);
  6. full size: `pretrain_gpt --config <preset> --dry-run` succeeds (no model allocated) and its total
     parameter count equals two references built from the SOURCE model's published config.json (the
     SOURCES table below, not the YAML, so a wrong preset shape fails): an independent closed-form count
     per family, and transformers' own model of that config -- instantiated for real in fp32 where it
     fits comfortably (< 0.5 B parameters), on the meta device otherwise -- both at gptrain's padded
     vocabulary. The same formula at the source model's own vocabulary must give its published count
     (where one is known exactly), which pins the formula. A deliberately wrong copy of one preset must
     fail this check (the check can fail).
Exits non-zero naming the preset and the broken property."""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

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
    if rms and p.get("swiglu") and rope and p.get("qk-layernorm"):
        # Qwen3 / Qwen3-MoE: transformers 4.46.3 has neither class, so the closed form (formula_count's) at
        # the preset's shape, every layer sparse when it has experts (decoder_sparse_step 1).
        groups = int(p["num-query-groups"]) if p.get("group-query-attention") else NH
        h = dict(num_hidden_layers=L, hidden_size=C, num_attention_heads=NH, num_key_value_heads=groups,
                 head_dim=int(p.get("kv-channels", C // NH)), intermediate_size=F)
        if p.get("num-experts"):
            h.update(num_experts=int(p["num-experts"]), moe_intermediate_size=int(p.get("moe-ffn-hidden-size", F)))
            family = "qwen3_moe"
        else:
            family = "qwen3"
        n = formula_count(family, dict(h, tie_word_embeddings=not untied), padded)
        return n, family
    if rms and p.get("swiglu") and rope and p.get("num-experts"):
        groups = int(p["num-query-groups"]) if p.get("group-query-attention") else NH
        cfg = transformers.MixtralConfig(vocab_size=padded, hidden_size=C,
                                         intermediate_size=int(p.get("moe-ffn-hidden-size", F)), num_hidden_layers=L,
                                         num_attention_heads=NH, num_key_value_heads=groups, max_position_embeddings=P,
                                         num_local_experts=int(p["num-experts"]),
                                         num_experts_per_tok=int(p.get("moe-router-topk", 2)),
                                         tie_word_embeddings=not untied)
    elif rms and p.get("swiglu") and rope and p.get("add-qkv-bias") and p.get("disable-bias-linear"):
        groups = int(p["num-query-groups"]) if p.get("group-query-attention") else NH
        cfg = transformers.Qwen2Config(vocab_size=padded, hidden_size=C, intermediate_size=F, num_hidden_layers=L,
                                       num_attention_heads=NH, num_key_value_heads=groups, max_position_embeddings=P,
                                       tie_word_embeddings=not untied)
    elif rms and p.get("swiglu") and rope and p.get("window-size"):  # a sliding window: Mistral's layout
        groups = int(p["num-query-groups"]) if p.get("group-query-attention") else NH
        cfg = transformers.MistralConfig(vocab_size=padded, hidden_size=C, intermediate_size=F, num_hidden_layers=L,
                                         num_attention_heads=NH, num_key_value_heads=groups, max_position_embeddings=P,
                                         sliding_window=int(str(p["window-size"]).strip("()").split(",")[0]) + 1,
                                         tie_word_embeddings=not untied)
    elif rms and p.get("geglu") and rope:
        groups = int(p["num-query-groups"]) if p.get("group-query-attention") else NH
        cfg = transformers.GemmaConfig(vocab_size=padded, hidden_size=C, intermediate_size=F, num_hidden_layers=L,
                                       num_attention_heads=NH, num_key_value_heads=groups,
                                       head_dim=int(p.get("kv-channels", C // NH)), max_position_embeddings=P,
                                       tie_word_embeddings=not untied, attention_bias=False)
    elif rms and p.get("swiglu") and rope:
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
    if res == "shared_norm" and not p.get("disable-bias-linear") and not p.get("disable-bias-attention"):
        n += L * 4 * C  # without --disable-bias-attention gptrain keeps q/k/v/out biases GPT-J has none of
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
    _, mt = hf_param_count(p)
    if mt is None:
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
          f"reduced size: {n_ours:,} parameters = transformers {mt}'s; 2 iterations, first loss {losses[0]:.4f}")


# ---------------------------------------------------------------------------------------------------
# 6. Full size: pretrain_gpt --dry-run against the source models
# ---------------------------------------------------------------------------------------------------

# The source model of each preset, from its published config.json (the presets' headers cite them),
# and its published parameter count at its own vocabulary. gptrain trains every preset with the GPT-2
# BPE (50257 tokens) padded to a multiple of 128 = 50304 rows, so the comparisons with gptrain use the
# source shape at vocabulary 50304 (transformers models built with vocab_size=50304; the output-layer
# bias of GPT-J is padded too), while the published-count check uses the source vocabulary.
SOURCES = {
    # openai-community/gpt2: 124,439,808 parameters (vocab 50257, tied lm_head).
    "gpt2-124m": ("gpt2", dict(n_layer=12, n_embd=768, n_head=12, n_positions=1024), 50257, 124_439_808),
    # openai-community/gpt2-medium: 354,823,168.
    "gpt2-350m": ("gpt2", dict(n_layer=24, n_embd=1024, n_head=16, n_positions=1024), 50257, 354_823_168),
    # openai-community/gpt2-xl: 1,557,611,200.
    "gpt2-1.5b": ("gpt2", dict(n_layer=48, n_embd=1600, n_head=25, n_positions=1024), 50257, 1_557_611_200),
    # EleutherAI/pythia-160m: 162,322,944 (Pythia paper, Table 1); its vocab is already padded to 50304.
    "pythia-160m": ("gpt_neox", dict(num_hidden_layers=12, hidden_size=768, num_attention_heads=12,
                                     intermediate_size=3072, rotary_pct=0.25, max_position_embeddings=2048,
                                     tie_word_embeddings=False), 50304, 162_322_944),
    # EleutherAI/gpt-j-6b: the model card states 6,053,381,344, measured on the mesh-transformer-jax
    # model; the HF GPTJForCausalLM layout (q/k/v/out without bias, fc_in/fc_out and lm_head with) at its
    # 50400 rows holds 6,050,882,784, 2,498,560 (0.04%) fewer, a difference no HF tensor explains; the
    # card's figure is printed, not asserted.
    "gptj-6b": ("gptj", dict(n_layer=28, n_embd=4096, n_head=16, n_inner=16384, rotary_dim=64, n_positions=2048,
                             tie_word_embeddings=False), 50400, None),
    # EleutherAI/gpt-neox-20b: 20,554,567,680 (model card; vocab padded to 50432).
    "neox-20b": ("gpt_neox", dict(num_hidden_layers=44, hidden_size=6144, num_attention_heads=64,
                                  intermediate_size=24576, rotary_pct=0.25, max_position_embeddings=2048,
                                  tie_word_embeddings=False), 50432, 20_554_567_680),
    # TinyLlama/TinyLlama-1.1B: 1,100,048,384 (vocab 32000).
    "llama-1b": ("llama", dict(num_hidden_layers=22, hidden_size=2048, num_attention_heads=32, num_key_value_heads=4,
                               intermediate_size=5632, max_position_embeddings=2048, tie_word_embeddings=False),
                 32000, 1_100_048_384),
    # meta-llama/Meta-Llama-3-8B: 8,030,261,248 (vocab 128256).
    "llama-8b": ("llama", dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                               intermediate_size=14336, max_position_embeddings=8192, tie_word_embeddings=False),
                 128256, 8_030_261_248),
    # meta-llama/Llama-3.1-8B: 8,030,261,248 (vocab 128256; the Llama 3 8B shape, RoPE scaling adds no parameter).
    "llama-3.1-8b": ("llama", dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                                   intermediate_size=14336, max_position_embeddings=131072, tie_word_embeddings=False,
                                   rope_theta=500000.0,
                                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
                     128256, 8_030_261_248),
    # meta-llama/Llama-3.2-1B: 1,235,814,400 (vocab 128256, tied embeddings).
    "llama-3.2-1b": ("llama", dict(num_hidden_layers=16, hidden_size=2048, num_attention_heads=32, num_key_value_heads=8,
                                   head_dim=64, intermediate_size=8192, max_position_embeddings=131072,
                                   tie_word_embeddings=True, rope_theta=500000.0,
                                   rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}),
                     128256, 1_235_814_400),
    # mistralai/Mixtral-8x7B-v0.1: 46,702,792,704 (vocab 32000; Jiang et al. 2024: "47B parameters").
    "mixtral-8x7b": ("mixtral", dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32,
                                     num_key_value_heads=8, intermediate_size=14336, num_local_experts=8,
                                     max_position_embeddings=32768, tie_word_embeddings=False),
                     32000, 46_702_792_704),
    # Qwen/Qwen2.5-7B: 7,615,616,512 (vocab 152064; the report's "7.61B").
    "qwen2.5-7b": ("qwen2", dict(num_hidden_layers=28, hidden_size=3584, num_attention_heads=28, num_key_value_heads=4,
                                 intermediate_size=18944, max_position_embeddings=32768, tie_word_embeddings=False),
                   152064, 7_615_616_512),
    # Qwen/Qwen2.5-72B: 72,706,203,648 (vocab 152064; the report's "72.7B").
    "qwen2.5-72b": ("qwen2", dict(num_hidden_layers=80, hidden_size=8192, num_attention_heads=64, num_key_value_heads=8,
                                  intermediate_size=29568, max_position_embeddings=32768, tie_word_embeddings=False),
                    152064, 72_706_203_648),
    # mistralai/Mistral-7B-v0.1: 7,241,732,096 (vocab 32000; Jiang et al. 2023, "Mistral 7B": "7B").
    "mistral-7b": ("mistral", dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                                   intermediate_size=14336, max_position_embeddings=32768, sliding_window=4096,
                                   tie_word_embeddings=False), 32000, 7_241_732_096),
    # Qwen/Qwen3-8B: 8,190,735,360 (vocab 151936, untied; the model card's 8.2B, 6.95B without embeddings).
    "qwen3-8b": ("qwen3", dict(num_hidden_layers=36, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                               head_dim=128, intermediate_size=12288, tie_word_embeddings=False),
                 151936, 8_190_735_360),
    # Qwen/Qwen3-30B-A3B: 30,532,122,624 (vocab 151936, untied; the model card's 30.5B, 3.3B activated).
    "qwen3-30b-a3b": ("qwen3_moe", dict(num_hidden_layers=48, hidden_size=2048, num_attention_heads=32,
                                        num_key_value_heads=4, head_dim=128, intermediate_size=6144,
                                        num_experts=128, moe_intermediate_size=768, tie_word_embeddings=False),
                      151936, 30_532_122_624),
    # google/gemma-2b: 2,506,172,416 (vocab 256000, tied; MQA, head_dim 256).
    "gemma-2b": ("gemma", dict(num_hidden_layers=18, hidden_size=2048, num_attention_heads=8, num_key_value_heads=1,
                               head_dim=256, intermediate_size=16384, max_position_embeddings=8192,
                               tie_word_embeddings=True), 256000, 2_506_172_416),
    # google/gemma-7b: 8,537,680,896 (vocab 256000, tied; head_dim 256 != 3072 / 16).
    "gemma-7b": ("gemma", dict(num_hidden_layers=28, hidden_size=3072, num_attention_heads=16, num_key_value_heads=16,
                               head_dim=256, intermediate_size=24576, max_position_embeddings=8192,
                               tie_word_embeddings=True), 256000, 8_537_680_896),
    # gptrain's own small Mixtral-layout shape (no published model): checked against the formula and transformers.
    "mixtral-tiny": ("mixtral", dict(num_hidden_layers=4, hidden_size=256, num_attention_heads=4, num_key_value_heads=2,
                                     intermediate_size=512, num_local_experts=8, max_position_embeddings=128,
                                     tie_word_embeddings=False), 50304, None),
}
GPTRAIN_VOCAB = -(-VOCAB // 128) * 128  # 50304: the GPT-2 BPE padded to a multiple of 128 (TP 1)
REAL_FP32_BELOW = 500_000_000  # instantiate transformers models for real (fp32) below this size


def formula_count(family, h, V):
    """Parameters of the HF architecture `family` with config fields h at vocabulary V, in closed
    form (written from the HF module layouts, independent of both gptrain and transformers)."""
    if family == "gpt2":  # wte, wpe; per layer ln_1, c_attn, c_proj, ln_2, c_fc, c_proj (all biased); ln_f; tied
        L, C, P = h["n_layer"], h["n_embd"], h["n_positions"]
        F = 4 * C
        return V * C + P * C + L * (2 * C + (3 * C * C + 3 * C) + (C * C + C) + 2 * C + (F * C + F) + (C * F + C)) + 2 * C
    if family == "gpt_neox":  # embed_in, per layer 2 LNs + biased qkv/dense/h_to_4h/4h_to_h, final LN, embed_out
        L, C, F = h["num_hidden_layers"], h["hidden_size"], h["intermediate_size"]
        return 2 * V * C + L * (4 * C + (3 * C * C + 3 * C) + (C * C + C) + (F * C + F) + (C * F + C)) + 2 * C
    if family == "gptj":  # wte; per layer ln_1, q/k/v/out (no bias), fc_in/fc_out (biased); ln_f; lm_head + bias
        L, C, F = h["n_layer"], h["n_embd"], h["n_inner"]
        return V * C + L * (2 * C + 4 * C * C + (F * C + F) + (C * F + C)) + 2 * C + V * C + V
    if family in ("llama", "mistral"):  # embed_tokens; per layer 2 RMSNorms, q/k/v/o, gate/up/down (no biases); norm; lm_head
        L, C, H, G, F = (h["num_hidden_layers"], h["hidden_size"], h["num_attention_heads"], h["num_key_value_heads"],
                         h["intermediate_size"])
        d = h.get("head_dim", C // H)
        heads = 1 if h.get("tie_word_embeddings") else 2  # a tied lm_head is embed_tokens itself
        return heads * V * C + L * (2 * C + C * H * d + 2 * C * G * d + H * d * C + 3 * C * F) + C
    if family == "qwen2":  # llama's layout plus q/k/v biases
        H, G = h["num_attention_heads"], h["num_key_value_heads"]
        d = h.get("head_dim", h["hidden_size"] // H)
        return formula_count("llama", h, V) + h["num_hidden_layers"] * (H + 2 * G) * d
    if family == "mixtral":  # llama's attention and norms; per layer a gate [E, C] and E experts' w1/w2/w3
        L, C, H, G, F, E = (h["num_hidden_layers"], h["hidden_size"], h["num_attention_heads"],
                            h["num_key_value_heads"], h["intermediate_size"], h["num_local_experts"])
        d = C // H
        return 2 * V * C + L * (2 * C + C * H * d + 2 * C * G * d + H * d * C + E * C + E * 3 * C * F) + C
    if family in ("qwen3", "qwen3_moe"):  # llama's layout with head_dim its own, q_norm/k_norm (head_dim each);
        L, C, H, G, d = (h["num_hidden_layers"], h["hidden_size"], h["num_attention_heads"], h["num_key_value_heads"],
                         h["head_dim"])  # MoE: every layer a gate [E, C] and E experts' gate/up/down, no shared one
        mlp = (h["num_experts"] * C + h["num_experts"] * 3 * C * h["moe_intermediate_size"] if family == "qwen3_moe"
               else 3 * C * h["intermediate_size"])
        heads = 1 if h.get("tie_word_embeddings") else 2
        return heads * V * C + L * (2 * C + C * H * d + 2 * C * G * d + H * d * C + 2 * d + mlp) + C
    if family == "gemma":  # embed_tokens (tied lm_head); per layer 2 RMSNorms, q/k/v/o at head_dim, gate/up/down; norm
        L, C, H, G, F, d = (h["num_hidden_layers"], h["hidden_size"], h["num_attention_heads"], h["num_key_value_heads"],
                            h["intermediate_size"], h["head_dim"])
        return V * C + L * (2 * C + C * H * d + 2 * C * G * d + H * d * C + 3 * C * F) + C
    raise ValueError(family)


def transformers_count(family, h, V, real):
    if family in ("qwen3", "qwen3_moe"):  # no class in transformers 4.46.3: the closed form stands alone
        return formula_count(family, h, V)
    cls = {"gpt2": transformers.GPT2Config, "gpt_neox": transformers.GPTNeoXConfig, "gptj": transformers.GPTJConfig,
           "llama": transformers.LlamaConfig, "mixtral": transformers.MixtralConfig,
           "qwen2": transformers.Qwen2Config, "mistral": transformers.MistralConfig,
           "gemma": transformers.GemmaConfig}[family]
    cfg = cls(vocab_size=V, **h)
    if real:  # a real fp32 model, initialized as transformers does (which also ties a tied lm_head)
        m = transformers.AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.float32)
    else:
        with _meta():
            m = transformers.AutoModelForCausalLM.from_config(cfg)
    n = sum(t.numel() for t in m.parameters())
    del m
    return n


def dry_run_total(path, a, extra=()):
    args = [os.path.join(a.bin, "pretrain_gpt"), "--config", path, "--dry-run", "--device", "cpu", *extra]
    t0 = time.time()
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    dt = time.time() - t0
    found = re.search(r"(\d+) parameters in total", r.stdout)
    if r.returncode != 0 or not found:
        return None, dt, r.stdout
    return int(found.group(1)), dt, r.stdout


def header_plan_args(path):
    """The flags of the `pretrain_gpt --config <this preset> --dry-run ...` command a preset's header shows
    (its comment lines, joined over trailing backslashes), after --config and its path; None without one."""
    lines, cmd = open(path).read().splitlines(), None
    for i, ln in enumerate(lines):
        if ln.startswith("#") and "pretrain_gpt --config" in ln and "--dry-run" in ln:
            cmd = ln.lstrip("# ")
            j = i
            while cmd.endswith("\\") and j + 1 < len(lines) and lines[j + 1].startswith("#"):
                j += 1
                cmd = cmd[:-1].rstrip() + " " + lines[j].lstrip("# ")
            break
    if cmd is None:
        return None
    words = cmd.split()
    return words[words.index("--config") + 2:]


def check_header_plan(path, a, failures, name, family, h):
    """The planned layout the header shows (e.g. 64 GPUs) prints a plan counting the whole model, its vocabulary
    padded to a multiple of 128 x the tensor-parallel size."""
    args = header_plan_args(path)
    if args is None:
        return
    tp = int(args[args.index("--tensor-model-parallel-size") + 1]) if "--tensor-model-parallel-size" in args else 1
    ref = formula_count(family, h, -(-VOCAB // (128 * tp)) * 128 * tp)
    r = subprocess.run([os.path.join(a.bin, "pretrain_gpt"), "--config", path, *args], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    found = re.search(r"(\d+) parameters in total", r.stdout)
    if r.returncode != 0 or not found or int(found.group(1)) != ref:
        failures.append(f"{name}: the header's plan (pretrain_gpt --config {name}.yaml {' '.join(args)}) "
                        f"exited {r.returncode} counting {found.group(1) if found else None} parameters, expected "
                        f"{ref:,}:\n{r.stdout[-1500:]}")
    else:
        print(f"ok: {name}: the header's plan ({' '.join(args)}) counts {ref:,} parameters")


def check_full_size(path, a, failures, name=None):
    """Section 6 for one preset file; returns the number of failures it added."""
    name = name or os.path.basename(path)[:-5]
    before = len(failures)
    family, h, src_vocab, published = SOURCES[name]
    ours, dt, out = dry_run_total(path, a)
    if ours is None:
        failures.append(f"{name}: pretrain_gpt --dry-run failed:\n{out[-2000:]}")
        return len(failures) - before
    if dt > 10:
        failures.append(f"{name}: --dry-run took {dt:.1f} s; it must not allocate the model")
    ref = formula_count(family, h, GPTRAIN_VOCAB)
    real = ref < REAL_FP32_BELOW
    hf = transformers_count(family, h, GPTRAIN_VOCAB, real)
    at_src = formula_count(family, h, src_vocab)
    if ours != ref or ours != hf:
        failures.append(f"{name}: pretrain_gpt --dry-run counts {ours:,} parameters; the source model "
                        f"({family}) at vocabulary {GPTRAIN_VOCAB} has {ref:,} (formula) / {hf:,} (transformers): "
                        f"the preset's shape differs from its source")
    if published is not None and at_src != published:
        failures.append(f"{name}: the formula gives {at_src:,} at the source vocabulary {src_vocab}, the published "
                        f"count is {published:,}")
    check_header_plan(path, a, failures, name, family, h)
    if family == "qwen3_moe":
        # The plan of an expert-parallel run (EP 8, each rank 1/8 of the experts) still counts the whole model's
        # parameters, and those a token goes through: the closed form with the top-k experts only.
        ep = ["--expert-model-parallel-size", "8", "--dry-run-world-size", "8"]
        ours_ep, _, out_ep = dry_run_total(path, a, ep)
        active = re.search(r"(\d+) parameters active per token", out_ep or "")
        want_active = formula_count(family, dict(h, num_experts=int(yaml.safe_load(open(path))["moe-router-topk"])),
                                    GPTRAIN_VOCAB) + h["num_hidden_layers"] * (h["num_experts"] - int(
                                        yaml.safe_load(open(path))["moe-router-topk"])) * h["hidden_size"]
        if ours_ep != ref or not active or int(active.group(1)) != want_active:
            failures.append(f"{name}: --dry-run {' '.join(ep)} prints {ours_ep} parameters in total and "
                            f"{active.group(1) if active else None} active per token; expected {ref:,} and "
                            f"{want_active:,}:\n{out_ep[-1500:]}")
        else:
            print(f"ok: {name}: --dry-run {' '.join(ep)}: {ours_ep:,} parameters, {want_active:,} active per token")
    if family == "gemma":  # head dim 256: a cuda plan is refused at start-up as the run would be
        args = [os.path.join(a.bin, "pretrain_gpt"), "--config", path, "--dry-run", "--device", "cuda", "--bf16"]
        r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode == 0 or "head dim 256 (--kv-channels) is not supported on the planned cuda backend" not in r.stdout:
            failures.append(f"{name}: --dry-run --device cuda was not refused naming head dim 256:\n{r.stdout[-1000:]}")
    if len(failures) == before:
        pub = (f"published {published:,}" if published is not None else
               "model card 6,053,381,344 (see SOURCES)" if family == "gptj" else "no published count")
        how = ("the closed form alone (transformers 4.46.3 has no Qwen3)" if family.startswith("qwen3") else
               f"transformers ({'fp32 instance' if real else 'meta device'})")
        print(f"ok: {name}: --dry-run {ours:,} parameters in {dt:.2f} s = formula = {how} "
              f"at vocab {GPTRAIN_VOCAB}; at the source vocab "
              f"{src_vocab}: {at_src:,} ({pub})")
    return len(failures) - before


def wrong_shape_fails(a, failures):
    """The full-size check must catch a preset whose shape differs from its source: a copy of
    gptj-6b.yaml with ffn-hidden-size 16000 (instead of 16384) must be reported."""
    src = os.path.join(a.presets, "gptj-6b.yaml")
    text = open(src).read()
    bad = re.sub(r"^ffn-hidden-size: 16384", "ffn-hidden-size: 16000", text, flags=re.M)
    if bad == text:
        failures.append("gptj-6b.yaml: no 'ffn-hidden-size: 16384' line to perturb for the wrong-shape self-test")
        return
    path = os.path.join(a.tmp, "gptj-6b-wrong.yaml")
    open(path, "w").write(bad)
    caught = []
    if check_full_size(path, a, caught, name="gptj-6b") == 0:
        failures.append("a gptj-6b preset with ffn-hidden-size 16000 passed the full-size check")
    else:
        print("ok: a gptj-6b copy with ffn-hidden-size 16000 fails the full-size check:", caught[0][:120], "...")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--presets", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tmp", required=True)
    a = ap.parse_args()
    files = sorted(f for f in os.listdir(a.presets) if f.endswith(".yaml"))
    want = {"gpt2-124m", "gpt2-350m", "gpt2-1.5b", "pythia-160m", "gptj-6b", "neox-20b", "llama-1b", "llama-8b",
            "mixtral-8x7b", "mixtral-tiny", "llama-3.1-8b", "llama-3.2-1b", "qwen2.5-7b", "qwen2.5-72b",
            "qwen3-8b", "qwen3-30b-a3b", "gemma-2b", "gemma-7b"}
    have = {f[:-5] for f in files}
    failures = []
    if not want <= have:
        failures.append(f"missing presets: {sorted(want - have)}")
    for f in files:
        check(os.path.join(a.presets, f), a, failures)
    for f in files:
        if f[:-5] in SOURCES:
            check_full_size(os.path.join(a.presets, f), a, failures)
        else:
            failures.append(f"{f}: no source model in SOURCES to check its full size against")
    wrong_shape_fails(a, failures)
    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))


if __name__ == "__main__":
    main()
