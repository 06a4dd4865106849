"""gptrain's forward vs transformers on the same weights and tokens, per family: a tiny random HF
model -> convert_from_hf -> gptrain_forward logits, compared with the HF model's logits (fp32).
Prints the max abs diff per model; fails above --tol (1e-4)."""
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from convert_common import convert_argparser, run  # noqa: E402
from convert_models import MODELS  # noqa: E402

a = convert_argparser(tol_only=True).parse_args()

worst = 0.0
for name, make in MODELS.items():
    if a.only and name not in a.only.split(","):
        continue
    m = make().eval()
    src, ck, out = (os.path.join(a.tmp, f"fwd_{name}_{x}") for x in ("hf", "ckpt", "logits.safetensors"))
    m.save_pretrained(src, safe_serialization=True)
    run([os.path.join(a.bin, "convert_from_hf"), "--load", src, "--save", ck])
    g = torch.Generator().manual_seed(7)
    ids = torch.randint(0, m.config.vocab_size, (1, 24), generator=g)
    run([os.path.join(a.bin, "gptrain_forward"), "--load", ck, "--tokens", ",".join(map(str, ids[0].tolist())), "--output", out])
    ours = load_file(out)["logits"]
    with torch.no_grad():
        ref = m(ids).logits[0]
    assert ours.shape == ref.shape, (ours.shape, ref.shape)
    d = (ours - ref).abs().max().item()
    worst = max(worst, d)
    print(f"{name}: max abs logit diff gptrain vs transformers = {d:.3e} (logit scale {ref.abs().max().item():.2f})")
    if not d <= a.tol:
        sys.exit(f"FAIL: {name}: {d} > {a.tol}")
print(f"PASS (worst {worst:.3e})")
