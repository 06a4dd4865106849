"""A real TP2 x PP2 checkpoint (saved by 4 MPI ranks, parallel/train/distributed_checkpoint.cpp) converts to
the same Hugging Face files as the same weights at TP1. The TP1 checkpoint is made here independently
of gptrain's loader: every global tensor is reassembled with torch from the rank files' slice
metadata ({"global_shape", "blocks"}), read with the safetensors package. Transformers' logits on the
export must equal gptrain_forward's on the sharded checkpoint (<= --tol)."""
import argparse
import glob
import json
import os
import shutil
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from convert_common import assert_identical, global_tensors, latest_iteration_dir, load_weight_set, run  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--ckpt", required=True)
ap.add_argument("--tmp", required=True)
ap.add_argument("--tol", type=float, default=1e-4)
a = ap.parse_args()
B = lambda n: os.path.join(a.bin, n)  # noqa: E731

src = latest_iteration_dir(a.ckpt)
meta = json.load(open(os.path.join(src, "metadata.json")))
assert meta["layout"]["tp"] == 2 and meta["layout"]["pp"] == 2, meta["layout"]
files = sorted(glob.glob(os.path.join(src, "model_tp*_pp*.safetensors")))
assert len(files) == 4, files

full = global_tensors(files)
print(f"reassembled {len(full)} global tensors from {len(files)} rank files")

tp1 = os.path.join(a.tmp, "tp1")
shutil.rmtree(tp1, ignore_errors=True)
os.makedirs(os.path.join(tp1, "iter_0000005"))
save_file({k: v.contiguous() for k, v in full.items()}, os.path.join(tp1, "iter_0000005", "model_tp00_pp000.safetensors"),
          metadata={"format": "pt"})
meta["layout"] = {"tp": 1, "pp": 1, "dp": 1, "distributed_optimizer": False}
meta.pop("crc32c", None)  # written by this script, not by gptrain: no checksum (read unverified)
json.dump(meta, open(os.path.join(tp1, "iter_0000005", "metadata.json"), "w"))
open(os.path.join(tp1, "latest_checkpointed_iteration.txt"), "w").write("5")

outs = []
for ck, tag in ((a.ckpt, "tp2pp2"), (tp1, "tp1")):
    o = os.path.join(a.tmp, f"hf_{tag}")
    run([B("convert_to_hf"), "--load", ck, "--output", o, "--no-tokenizer"])
    outs.append(o)
assert_identical(load_weight_set(outs[1]), load_weight_set(outs[0]), f"{meta['model'].get('family')}: TP2xPP2 save vs TP1 HF export")

m = AutoModelForCausalLM.from_pretrained(outs[0]).eval()
ids = [3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26]
out = os.path.join(a.tmp, "logits.safetensors")
run([B("gptrain_forward"), "--load", a.ckpt, "--tokens", ",".join(map(str, ids)), "--output", out])
with torch.no_grad():
    d = (load_file(out)["logits"] - m(torch.tensor([ids])).logits[0]).abs().max().item()
print(f"transformers on the export vs gptrain_forward on the TP2xPP2 checkpoint: max abs diff {d:.3e}")
if not d <= a.tol:
    sys.exit(f"FAIL: {d} > {a.tol}")
print("PASS")
