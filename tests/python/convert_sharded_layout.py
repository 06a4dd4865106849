"""A checkpoint saved at TP2 x PP2 converts to the same Hugging Face files as at TP1, and gptrain's
forward on it gives the same logits.

Until helper `parallel` saves sharded checkpoints in CI, the TP2 x PP2 checkpoint is written here by
splitting a TP1 checkpoint exactly as docs/checkpoint-format.md and core/model/param_layout.cpp describe
(global names, per-rank files model_tp{TT}_pp{PPP}, slice metadata {"global_shape", "blocks"} with
Q_r/K_r/V_r and gate_r/up_r row blocks, column blocks for row-parallel weights, vocabulary re-padded
to a multiple of 128 * TP, layers split over stages). With --ckpt DIR it checks a real sharded save
against --ref-ckpt (the same weights at TP1)."""
import argparse
import json
import os
import shutil
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

from convert_common import assert_identical, load_weight_set, run  # noqa: E402
from convert_models import MODELS  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--bin", required=True)
ap.add_argument("--tmp", required=True)
ap.add_argument("--tp", type=int, default=2)
ap.add_argument("--pp", type=int, default=2)
ap.add_argument("--only", default="gpt2_tanh_tied,llama_gqa,neox_parallel,gptj")
a = ap.parse_args()
B = lambda n: os.path.join(a.bin, n)  # noqa: E731


def split_checkpoint(src_ck, dst_ck, tp, pp):
    d = os.path.join(src_ck, "release")
    meta = json.load(open(os.path.join(d, "metadata.json")))
    mm = meta["model"]
    t = load_file(os.path.join(d, "model_tp00_pp000.safetensors"))
    NH, NKV, HS, F, L = mm["num_attention_heads"], mm["num_query_groups"], mm["kv_channels"], mm["ffn_hidden_size"], mm["num_layers"]
    V = mm["vocab_size"]
    m = 128 * tp
    Vp = (V + m - 1) // m * m
    out = os.path.join(dst_ck, "iter_0000005")
    os.makedirs(out)

    def repad(x):
        y = torch.zeros((Vp,) + tuple(x.shape[1:]), dtype=x.dtype)
        y[:V] = x[:V]
        return y

    def stage_of(name):
        if name.startswith("decoder.layers."):
            return int(name.split(".")[2]) * pp // L
        if name.startswith("embedding."):
            return 0
        return pp - 1  # final norm, output layer

    def blocks_for(name, r):
        nh, nkv, f = NH // tp, NKV // tp, F // tp
        if name in ("embedding.word_embeddings.weight", "output_layer.weight", "output_layer.bias"):
            return [[0, r * Vp // tp, Vp // tp]]
        if name.endswith("linear_qkv.weight") or name.endswith("linear_qkv.bias"):
            return [[0, r * nh * HS, nh * HS], [0, NH * HS + r * nkv * HS, nkv * HS], [0, (NH + NKV) * HS + r * nkv * HS, nkv * HS]]
        if name.endswith("linear_proj.weight"):
            return [[1, r * nh * HS, nh * HS]]
        if name.endswith("linear_fc1.weight") or name.endswith("linear_fc1.bias"):
            b = [[0, r * f, f]]
            return b + [[0, F + r * f, f]] if mm["swiglu"] else b
        if name.endswith("linear_fc2.weight"):
            return [[1, r * f, f]]
        return None

    for r in range(tp):
        for p in range(pp):
            tensors, smeta = {}, {"format": "pt"}
            for name, x in t.items():
                if stage_of(name) != p:
                    continue
                if name in ("embedding.word_embeddings.weight", "output_layer.weight", "output_layer.bias"):
                    x = repad(x)
                blocks = blocks_for(name, r)
                if blocks is None:
                    tensors[name] = x.clone()
                    continue
                dim = blocks[0][0]
                tensors[name] = torch.cat([x.narrow(dim, off, ln) for _, off, ln in blocks], dim=dim).contiguous()
                smeta[name] = json.dumps({"global_shape": list(x.shape), "blocks": blocks})
            save_file(tensors, os.path.join(out, f"model_tp{r:02d}_pp{p:03d}.safetensors"), metadata=smeta)
    mm["padded_vocab_size"] = Vp
    meta["iteration"] = 5
    meta["layout"] = {"tp": tp, "pp": pp, "dp": 1, "distributed_optimizer": False}
    meta.pop("crc32c", None)  # written by this script, not by gptrain: no checksum (read unverified)
    json.dump(meta, open(os.path.join(out, "metadata.json"), "w"), indent=2)
    open(os.path.join(dst_ck, "latest_checkpointed_iteration.txt"), "w").write("5")


def logits(ck, ids):
    out = os.path.join(a.tmp, "l.safetensors")
    run([B("gptrain_forward"), "--load", ck, "--tokens", ",".join(map(str, ids)), "--output", out])
    return load_file(out)["logits"]


for name in a.only.split(","):
    m = MODELS[name]().eval()
    src, ck1, ckn = (os.path.join(a.tmp, f"{name}_{x}") for x in ("hf", "tp1", f"tp{a.tp}pp{a.pp}"))
    for d in (src, ck1, ckn):
        shutil.rmtree(d, ignore_errors=True)
    m.save_pretrained(src, safe_serialization=True)
    run([B("convert_from_hf"), "--load", src, "--save", ck1])
    split_checkpoint(ck1, ckn, a.tp, a.pp)
    outs = []
    for ck in (ck1, ckn):
        o = ck + "_hf"
        run([B("convert_to_hf"), "--load", ck, "--output", o, "--no-tokenizer"])
        outs.append(o)
    assert_identical(load_weight_set(outs[0]), load_weight_set(outs[1]), f"{name}: TP{a.tp}xPP{a.pp} vs TP1 HF export")
    assert json.load(open(os.path.join(outs[0], "config.json"))) == json.load(open(os.path.join(outs[1], "config.json")))
    ids = [1, 5, 9, 200, 3, 77, 500, 2]
    l1, ln = logits(ck1, ids), logits(ckn, ids)
    assert torch.equal(l1, ln), f"{name}: forward logits differ between layouts ({(l1 - ln).abs().max().item()})"
    print(f"ok: {name}: TP{a.tp}xPP{a.pp} checkpoint -> same HF files and bitwise the same gptrain logits as TP1")
    # A missing rank file is an error that names it.
    os.remove(os.path.join(ckn, "iter_0000005", "model_tp01_pp001.safetensors"))
    _, msg = run([B("convert_to_hf"), "--load", ckn, "--output", os.path.join(a.tmp, "never"), "--no-tokenizer"], expect_ok=False)
    assert "model_tp01_pp001.safetensors" in msg, msg
print("PASS")
