"""--apply-layernorm-1p end to end, for a LayerNorm (GPT-2) and an RMSNorm (Llama-style) model:

1. Equivalence: the 1p run (norm weights stored as gamma - 1, initialised to 0) and the plain run (gamma,
   initialised to 1) start from the same model, so iteration 1's loss and grad norm are bit-identical
   and the later losses agree to rounding.
2. The 1p checkpoint records the flag, its norm weights trained away from 0, and loading it without the
   flag (or a plain checkpoint with it) is refused; resuming it reproduces the uninterrupted run.
3. convert_to_hf writes gamma = 1 + w; transformers' logits and loss equal gptrain_forward's (fp32).
4. convert_from_hf --apply-layernorm-1p stores gamma - 1 (w up to the bits fp32 gamma cannot hold; the HF
   tensors round-trip bit for bit, same logits); without the flag it stores gamma, same logits.
"""
import json
import os
import shutil
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from convert_common import convert_argparser, run  # noqa: E402

a = convert_argparser(tokenizer=True, tol_only=True).parse_args()
B = lambda n: os.path.join(a.bin, n)  # noqa: E731

COMMON = ["--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "32",
          "--max-position-embeddings", "32", "--micro-batch-size", "2", "--global-batch-size", "4", "--train-iters", "8",
          "--lr", "3e-3", "--min-lr", "3e-4", "--lr-decay-style", "cosine", "--mock-data", "--tokenizer-type",
          "GPT2BPETokenizer", "--vocab-file", a.vocab, "--merge-file", a.merges, "--eval-iters", "0",
          "--log-interval", "1", "--save-interval", "4", "--seed", "5", "--init-method-std", "0.05",
          "--device", "cpu"]
VARIANTS = {
    "gpt2": [],
    "llama": ["--normalization", "RMSNorm", "--position-embedding-type", "rope", "--swiglu", "--ffn-hidden-size", "96",
              "--disable-bias-linear", "--untie-embeddings-and-output-weights"],
}
ONE_P = ["--apply-layernorm-1p"]
# gptrain norm weight -> its Hugging Face tensor
HF_NORMS = {
    "gpt2": {"decoder.final_layernorm.weight": "transformer.ln_f.weight",
             **{f"decoder.layers.{i}.{g}.weight": f"transformer.h.{i}.{h}.weight"
                for i in range(2) for g, h in (("input_layernorm", "ln_1"), ("pre_mlp_layernorm", "ln_2"))}},
    "llama": {"decoder.final_layernorm.weight": "model.norm.weight",
              **{f"decoder.layers.{i}.{g}.weight": f"model.layers.{i}.{h}.weight"
                 for i in range(2) for g, h in (("input_layernorm", "input_layernorm"),
                                                ("pre_mlp_layernorm", "post_attention_layernorm"))}},
}
IDS = [464, 2068, 7586, 21831, 18045, 625, 262, 16931, 3290, 11, 531, 308, 457, 3201, 13, 383, 1110]


def train_records(path):
    return [r for r in map(json.loads, open(path)) if r.get("event") == "train"]


def norm_names(t):
    return sorted(k for k in t if k.endswith("layernorm.weight"))


def model_tensors(ck, it):
    return load_file(os.path.join(ck, f"iter_{it:07d}", "model_tp00_pp000.safetensors"))


def gptrain_logits(ck):
    out = os.path.join(a.tmp, "logits.safetensors")
    run([B("gptrain_forward"), "--load", ck, "--tokens", ",".join(map(str, IDS)), "--output", out])
    return load_file(out)["logits"]


def loss_of(logits):
    return torch.nn.functional.cross_entropy(logits[:-1].double(), torch.tensor(IDS[1:])).item()


for name, flags in VARIANTS.items():
    if a.only and name not in a.only.split(","):
        continue
    d = lambda x: os.path.join(a.tmp, f"{name}_{x}")  # noqa: E731
    for x in ("plain", "1p", "resumed", "hf", "back", "back_gamma", "hf_again"):
        shutil.rmtree(d(x), ignore_errors=True)

    # 1. same start, same first step
    run([B("pretrain_gpt")] + COMMON + flags + ["--save", d("plain"), "--metrics-file", d("plain.jsonl")])
    run([B("pretrain_gpt")] + COMMON + flags + ONE_P + ["--save", d("1p"), "--metrics-file", d("1p.jsonl")])
    plain, one_p = train_records(d("plain.jsonl")), train_records(d("1p.jsonl"))
    assert len(plain) == len(one_p) == 8, (len(plain), len(one_p))
    l0, l1 = plain[0]["losses"]["lm loss"], one_p[0]["losses"]["lm loss"]
    assert l0 == l1 and plain[0]["grad_norm"] == one_p[0]["grad_norm"], (plain[0], one_p[0])
    worst = max(abs(p["losses"]["lm loss"] - q["losses"]["lm loss"]) / p["losses"]["lm loss"] for p, q in zip(plain, one_p))
    print(f"{name}: iteration 1 loss {l0!r} in both runs (bit-identical, grad norm too); "
          f"8 iterations max rel loss diff {worst:.2e}")
    assert worst < 1e-4, worst

    # 2. the checkpoint: flag recorded, trained w, mismatches refused, bitwise resume
    meta = json.load(open(os.path.join(d("1p"), "iter_0000008", "metadata.json")))
    assert meta["model"]["apply_layernorm_1p"] is True, meta["model"]
    assert json.load(open(os.path.join(d("plain"), "iter_0000008", "metadata.json")))["model"]["apply_layernorm_1p"] is False
    w, g = model_tensors(d("1p"), 8), model_tensors(d("plain"), 8)
    norms = norm_names(w)
    assert len(norms) == 5, norms
    moved = min(w[k].abs().max().item() for k in norms)
    assert 1e-4 < moved and max(w[k].abs().max().item() for k in norms) < 0.5, moved
    # the two runs' gammas agree to rounding
    gdiff = max((1 + w[k] - g[k]).abs().max().item() for k in norms)
    print(f"  stored w trained away from 0 (smallest max |w| {moved:.2e}); 1 + w vs the plain run's gamma: "
          f"max diff {gdiff:.2e}")
    assert gdiff < 1e-4, gdiff
    _, out = run([B("pretrain_gpt")] + COMMON + flags + ["--load", d("1p"), "--train-iters", "9"], expect_ok=False)
    assert "give --apply-layernorm-1p" in out, out[-600:]
    _, out = run([B("pretrain_gpt")] + COMMON + flags + ONE_P + ["--load", d("plain"), "--train-iters", "9"],
                 expect_ok=False)
    assert "this run has --apply-layernorm-1p" in out, out[-600:]
    shutil.copytree(d("1p"), d("resumed"))
    shutil.rmtree(os.path.join(d("resumed"), "iter_0000008"))
    with open(os.path.join(d("resumed"), "latest_checkpointed_iteration.txt"), "w") as f:
        f.write("4")
    run([B("pretrain_gpt")] + COMMON + flags + ONE_P + ["--load", d("resumed"), "--save", d("resumed")])
    r = model_tensors(d("resumed"), 8)
    assert all(torch.equal(r[k], w[k]) for k in w), "resume from iteration 4 differs from the uninterrupted run"
    print("  refused without the flag / with it on a plain checkpoint; resumed from iteration 4: bitwise the same")

    # 3. export: gamma = 1 + w, transformers == gptrain
    run([B("convert_to_hf"), "--load", d("1p"), "--output", d("hf")])
    hf = load_file(os.path.join(d("hf"), "model.safetensors"))
    for ours_name, hf_name in HF_NORMS[name].items():
        assert torch.equal(hf[hf_name], 1 + w[ours_name]), f"{hf_name} is not 1 + {ours_name}"
    m = AutoModelForCausalLM.from_pretrained(d("hf")).eval()
    with torch.no_grad():
        ref = m(torch.tensor([IDS])).logits[0]
    ours = gptrain_logits(d("1p"))
    diff = (ours - ref).abs().max().item()
    dl = abs(loss_of(ours) - loss_of(ref))
    print(f"  transformers vs gptrain_forward: max abs logit diff {diff:.3e}, loss {loss_of(ref):.6f} "
          f"(diff {dl:.2e})")
    assert diff <= a.tol and dl <= 1e-5, (diff, dl)

    # 4. import: w back bit for bit with the flag, gamma without; the same logits either way
    run([B("convert_from_hf"), "--load", d("hf"), "--save", d("back"), "--apply-layernorm-1p"])
    back = load_file(os.path.join(d("back"), "release", "model_tp00_pp000.safetensors"))
    assert json.load(open(os.path.join(d("back"), "release", "metadata.json")))["model"]["apply_layernorm_1p"] is True
    # w comes back as fl(1 + w) - 1: the subtraction is exact, only what the fp32 gamma could not hold is lost
    assert all(torch.equal(back[k], (1 + w[k]) - 1) for k in norms), "import with the flag does not give gamma - 1"
    assert max((back[k] - w[k]).abs().max().item() for k in norms) <= 2.0 ** -24
    # and the HF side round-trips bit for bit: exporting the import gives the same gamma
    run([B("convert_to_hf"), "--load", d("back"), "--output", d("hf_again")])
    again = load_file(os.path.join(d("hf_again"), "model.safetensors"))
    assert all(torch.equal(again[k], hf[k]) for k in hf), "HF -> gptrain -> HF changed a tensor"
    d2 = (gptrain_logits(d("back")) - ours).abs().max().item()
    run([B("convert_from_hf"), "--load", d("hf"), "--save", d("back_gamma")])
    back_g = load_file(os.path.join(d("back_gamma"), "release", "model_tp00_pp000.safetensors"))
    assert all(torch.equal(back_g[k], 1 + w[k]) for k in norms), "import without the flag does not store gamma"
    d3 = (gptrain_logits(d("back_gamma")) - ours).abs().max().item()
    print(f"  HF -> gptrain with --apply-layernorm-1p: gamma - 1 (HF round trip bitwise), logits diff {d2:.3e}; without: gamma, "
          f"logits diff {d3:.3e}")
    assert d2 <= a.tol and d3 <= a.tol, (d2, d3)
print("PASS")
