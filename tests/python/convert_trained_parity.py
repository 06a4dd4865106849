"""A model trained by pretrain_gpt, converted by convert_to_hf, loaded by transformers: logits equal
gptrain's forward (fp32, max abs diff <= --tol) and generate() runs, for a GPT-2, a Llama-style (GQA,
SwiGLU, RMSNorm, interleaved RoPE: exercises the q/k permutation on trained weights), a NeoX-style
(partial rotary, two norms) and a GPT-J-style (shared norm, interleaved partial rotary, lm_head bias)
model (GPT-J's bias layout, --disable-bias-attention: trained MLP and lm_head biases, no attention
biases). Also: the HF directory converts back (convert_from_hf) to a checkpoint with the same logits."""
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402

from convert_common import convert_argparser, patch_generate_for_debian_torch, run  # noqa: E402

patch_generate_for_debian_torch()
a = convert_argparser(tokenizer=True, tol_only=True).parse_args()
B = lambda n: os.path.join(a.bin, n)  # noqa: E731

COMMON = ["--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "32",
          "--max-position-embeddings", "32", "--micro-batch-size", "2", "--global-batch-size", "4", "--train-iters", "8",
          "--lr", "3e-3", "--min-lr", "3e-4", "--lr-decay-style", "cosine", "--mock-data", "--tokenizer-type", "GPT2BPETokenizer",
          "--vocab-file", a.vocab, "--merge-file", a.merges, "--eval-iters", "0", "--log-interval", "4",
          "--save-interval", "8", "--seed", "3", "--init-method-std", "0.05"]
VARIANTS = {
    "gpt2": ([], "gpt2"),
    "llama": (["--normalization", "RMSNorm", "--position-embedding-type", "rope", "--swiglu", "--ffn-hidden-size", "96",
               "--disable-bias-linear", "--group-query-attention", "--num-query-groups", "2",
               "--untie-embeddings-and-output-weights", "--rotary-interleaved"], "llama"),
    "neox": (["--position-embedding-type", "rope", "--rotary-percent", "0.25", "--parallel-residual", "two_norms",
              "--untie-embeddings-and-output-weights"], "gpt_neox"),
    # GPT-J's bias layout: MLP and lm_head biases, none on q/k/v/out_proj (--disable-bias-attention)
    "gptj": (["--position-embedding-type", "rope", "--rotary-percent", "0.5", "--rotary-interleaved",
              "--parallel-residual", "shared_norm", "--untie-embeddings-and-output-weights", "--output-layer-bias",
              "--disable-bias-attention"], "gptj"),
}


def check_trained_biases(name, ck):
    """The biases the variant trains moved away from their zero init (so the export carries real
    values), and --disable-bias-attention left no attention bias in the checkpoint."""
    t = load_file(os.path.join(ck, "iter_0000008", "model_tp00_pp000.safetensors"))
    biases = [k for k in t if k.endswith(".bias") and "layernorm" not in k]
    attn = [k for k in biases if "self_attention" in k]
    if name == "gptj":
        assert not attn, f"gptj: attention biases in the checkpoint: {attn}"
        assert any("mlp.linear_fc1" in k for k in biases) and "output_layer.bias" in biases, biases
    moved = min(t[k].abs().max().item() for k in biases) if biases else None
    if biases:
        assert moved > 1e-4, f"{name}: a bias stayed at its zero init after training (max |b| {moved:.2e})"
        print(f"  {len(biases)} bias tensors trained (smallest max |b| {moved:.2e}); attention biases: {len(attn)}")


def gptrain_logits(ck, ids):
    out = os.path.join(a.tmp, "logits.safetensors")
    run([B("gptrain_forward"), "--load", ck, "--tokens", ",".join(map(str, ids)), "--output", out])
    return load_file(out)["logits"]


worst = 0.0
for name, (flags, model_type) in VARIANTS.items():
    if a.only and name not in a.only.split(","):
        continue
    ck, hf, back = (os.path.join(a.tmp, f"{name}_{x}") for x in ("ckpt", "hf", "back"))
    run([B("pretrain_gpt")] + COMMON + flags + ["--save", ck])
    meta = json.load(open(os.path.join(ck, "iter_0000008", "metadata.json")))
    check_trained_biases(name, ck)
    run([B("convert_to_hf"), "--load", ck, "--output", hf])  # tokenizer files from the checkpoint's args
    cfg = json.load(open(os.path.join(hf, "config.json")))
    assert cfg["model_type"] == model_type, (cfg["model_type"], model_type, meta["model"]["family"])
    m = AutoModelForCausalLM.from_pretrained(hf).eval()
    tok = AutoTokenizer.from_pretrained(hf)
    ids = tok("The quick brown fox jumps over the lazy dog, said gptrain.", return_tensors="pt").input_ids
    with torch.no_grad():
        ref = m(ids).logits[0]
    ours = gptrain_logits(ck, ids[0].tolist())
    d = (ours - ref).abs().max().item()
    worst = max(worst, d)
    print(f"{name}: trained 8 iterations; transformers vs gptrain forward max abs logit diff {d:.3e} "
          f"(logit scale {ref.abs().max().item():.2f})")
    if not d <= a.tol:
        sys.exit(f"FAIL: {name}: {d} > {a.tol}")
    g = m.generate(ids, max_new_tokens=8, min_new_tokens=8, do_sample=False, pad_token_id=tok.eos_token_id,
                   attention_mask=torch.ones_like(ids))
    assert g.shape[1] == ids.shape[1] + 8
    # generate()'s greedy next token is gptrain's argmax
    g1 = m.generate(ids, max_new_tokens=1, do_sample=False, pad_token_id=tok.eos_token_id, attention_mask=torch.ones_like(ids))
    assert g1[0, -1].item() == int(ours[-1].argmax()), "greedy next token differs"
    print(f"  generate(): {tok.decode(g[0, ids.shape[1]:])!r}")
    # and back: HF -> gptrain gives the same logits (the interleaved Llama comes back half-split)
    run([B("convert_from_hf"), "--load", hf, "--save", back])
    d2 = (gptrain_logits(back, ids[0].tolist()) - ours).abs().max().item()
    print(f"  HF -> gptrain again: logits diff {d2:.3e}")
    assert d2 <= a.tol, d2
print(f"PASS (worst {worst:.3e})")
