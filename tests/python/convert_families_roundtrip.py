"""Every family the converters support, against transformers (tiny random models, convert_models.py):
  1. HF -> convert_from_hf -> convert_to_hf gives back every tensor bitwise identical, and
     transformers loads the result with identical logits;
  2. RoPE convention: the gptrain checkpoint is rewritten (with the safetensors package) to the other
     pair convention (q/k rows permuted per head, rotary_interleaved flipped). gptrain's forward on it
     must still match transformers (<= 1e-4), and convert_to_hf must permute back to the original HF
     tensors exactly: this pins the permutation to gptrain's own rope kernel;
  3. GPT-J: an imported GPT-J has no attention biases (disable_bias_attention); a gptrain checkpoint
     that has them (rewritten here to the all-biases layout) gets non-zero out_proj / v biases folded
     exactly into fc_out.bias (logits still match); a non-zero q bias is refused with a message;
  4. Llama rope_scaling: "llama3", "linear" and "yarn" round trip (above); other types, a non-whole linear
     factor and unknown keys are refused by name."""
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from convert_common import assert_identical, convert_argparser, load_weight_set, run  # noqa: E402
from convert_models import FROM_HF_FLAGS, MODELS, llama, llama3_scaling  # noqa: E402
import qwen3_reference  # noqa: E402

a = convert_argparser(tol_only=True).parse_args()
B = lambda n: os.path.join(a.bin, n)  # noqa: E731


def forward_diff(ck, m, what):
    ids = torch.randint(0, m.config.vocab_size, (1, 20), generator=torch.Generator().manual_seed(11))
    out = os.path.join(a.tmp, "logits.safetensors")
    run([B("gptrain_forward"), "--load", ck, "--tokens", ",".join(map(str, ids[0].tolist())), "--output", out])
    with torch.no_grad():
        d = (load_file(out)["logits"] - m(ids).logits[0]).abs().max().item()
    print(f"  {what}: gptrain forward vs transformers max abs diff {d:.3e}")
    if not d <= a.tol:
        sys.exit(f"FAIL: {what}: {d} > {a.tol}")


def rewrite_ckpt(ck, fn_tensors, fn_model=None):
    d = os.path.join(ck, "release")
    f = os.path.join(d, "model_tp00_pp000.safetensors")
    t = load_file(f)
    fn_tensors(t)
    save_file(t, f, metadata={"format": "pt"})
    if fn_model:
        meta = json.load(open(os.path.join(d, "metadata.json")))
        fn_model(meta["model"])
        meta.pop("crc32c", None)  # rewritten by hand: the checksum of the old content no longer holds
        json.dump(meta, open(os.path.join(d, "metadata.json"), "w"), indent=2)


def permute_half_to_interleaved(w, heads, hd, rd):
    """w: (heads*hd, ...) rows; per head, half-split row c*rd/2+j -> interleaved row 2j+c."""
    w = w.clone().view(heads, hd, *w.shape[1:])
    rot = w[:, :rd].clone().view(heads, 2, rd // 2, *w.shape[2:]).transpose(1, 2).reshape(heads, rd, *w.shape[2:])
    w[:, :rd] = rot
    return w.view(heads * hd, *w.shape[2:])


def permute_interleaved_to_half(w, heads, hd, rd):
    w = w.clone().view(heads, hd, *w.shape[1:])
    rot = w[:, :rd].clone().view(heads, rd // 2, 2, *w.shape[2:]).transpose(1, 2).reshape(heads, rd, *w.shape[2:])
    w[:, :rd] = rot
    return w.view(heads * hd, *w.shape[2:])


for name, make in MODELS.items():
    if a.only and name not in a.only.split(","):
        continue
    print(name)
    m = make().eval()
    src, ck, back = (os.path.join(a.tmp, f"{name}_{x}") for x in ("hf", "ckpt", "back"))
    m.save_pretrained(src, safe_serialization=True)
    run([B("convert_from_hf"), "--load", src, "--save", ck, *FROM_HF_FLAGS.get(name, [])])
    run([B("convert_to_hf"), "--load", ck, "--output", back, "--no-tokenizer"])
    ref = load_weight_set(src)
    assert_identical(ref, load_weight_set(back), f"  {name}: HF -> gptrain -> HF")
    ids = torch.tensor([[5, 17, 300, 2, 999 % m.config.vocab_size, 42]])
    # transformers 4.46.3 has no Qwen3: its torch reference reads the export, requiring Qwen3's config keys.
    load = qwen3_reference.from_pretrained if isinstance(m, qwen3_reference.Qwen3ForCausalLM) else \
        AutoModelForCausalLM.from_pretrained
    with torch.no_grad():
        assert (load(back)(ids).logits == m(ids).logits).all(), f"{name}: logits differ after round trip"

    meta = json.load(open(os.path.join(ck, "release", "metadata.json")))["model"]
    if meta["position_embedding_type"] != "rope" or meta.get("yarn"):  # YaRN rotates half-split pairs only
        continue
    nh, nkv, hs = meta["num_attention_heads"], meta["num_query_groups"], meta["kv_channels"]
    rd = int(hs * meta["rotary_percent"])
    to_inter = not meta["rotary_interleaved"]
    perm = permute_half_to_interleaved if to_inter else permute_interleaved_to_half

    def flip(t):
        for k in list(t):
            if k.endswith("linear_qkv.weight") or k.endswith("linear_qkv.bias"):
                w = t[k]
                q, kk, v = w[:nh * hs], w[nh * hs:(nh + nkv) * hs], w[(nh + nkv) * hs:]
                t[k] = torch.cat([perm(q, nh, hs, rd), perm(kk, nkv, hs, rd), v]).contiguous()
            if k.endswith("q_layernorm.weight") or k.endswith("k_layernorm.weight"):  # one value per head dim
                t[k] = perm(t[k], 1, hs, rd).contiguous()

    rewrite_ckpt(ck, flip, lambda mm: mm.__setitem__("rotary_interleaved", to_inter))
    forward_diff(ck, m, f"{name} saved {'interleaved' if to_inter else 'half-split'}")
    run([B("convert_to_hf"), "--load", ck, "--output", back, "--no-tokenizer"])
    assert_identical(ref, load_weight_set(back), f"  {name}: other rope convention -> HF")

    if meta["family"] == "gptj":
        C = meta["hidden_size"]
        g = torch.Generator().manual_seed(3)

        assert meta.get("disable_bias_attention") is True, "convert_from_hf of a GPT-J must set disable_bias_attention"
        assert not any("self_attention" in k and k.endswith(".bias") for k in load_file(
            os.path.join(ck, "release", "model_tp00_pp000.safetensors"))), "imported GPT-J has attention biases"

        def add_biases(t):
            for i in range(meta["num_layers"]):
                b = t[f"decoder.layers.{i}.self_attention.linear_qkv.bias"] = torch.zeros(3 * C)
                b[2 * C:] = torch.randn(C, generator=g) * 0.1     # v bias: folds through out_proj
                b[C + rd:C + hs] = torch.randn(hs - rd, generator=g)  # head 0's non-rotary k dims: softmax-invariant
                t[f"decoder.layers.{i}.self_attention.linear_proj.bias"] = torch.randn(C, generator=g) * 0.1

        rewrite_ckpt(ck, add_biases, lambda mm: mm.__setitem__("disable_bias_attention", False))
        run([B("convert_to_hf"), "--load", ck, "--output", back, "--no-tokenizer"])
        folded = AutoModelForCausalLM.from_pretrained(back).eval()
        forward_diff(ck, folded, f"{name} with attention biases folded into fc_out.bias")

        def add_q_bias(t):
            t["decoder.layers.1.self_attention.linear_qkv.bias"][3] = 0.5

        rewrite_ckpt(ck, add_q_bias)
        _, msg = run([B("convert_to_hf"), "--load", ck, "--output", os.path.join(a.tmp, "never"), "--no-tokenizer"], expect_ok=False)
        assert "query bias" in msg and "layer 1" in msg, msg
        print("  gptj: non-zero q bias refused:", msg.strip().splitlines()[-1][-90:])

# rope_scaling that gptrain does not implement: refused by name, no checkpoint written.
if not a.only or "llama_rope_scaling_refused" in a.only.split(","):
    for what, scaling, want in [
            ("yarn with its own original length", {"rope_type": "yarn", "factor": 4.0,
                                                   "original_max_position_embeddings": 32},
             'key "original_max_position_embeddings" is not supported with rope_type "yarn"'),
            ("dynamic (old key \"type\")", {"type": "dynamic", "factor": 2.0}, 'rope_type "dynamic" is not supported'),
            ("linear by 2.5", {"rope_type": "linear", "factor": 2.5}, "must be a whole number"),
            ("llama3 with an unknown key", dict(llama3_scaling(8.0), mscale=1.0), 'key "mscale" is not supported')]:
        src, ck = os.path.join(a.tmp, "refused_hf"), os.path.join(a.tmp, "refused_ckpt")
        llama(rope_scaling=scaling).save_pretrained(src, safe_serialization=True)
        _, msg = run([B("convert_from_hf"), "--load", src, "--save", ck], expect_ok=False)
        assert want in msg and "rope_scaling" in msg, msg
        assert not os.path.exists(ck), f"{ck} written by a refused conversion"
        print(f"  llama rope_scaling {what} refused:", msg.strip().splitlines()[-1][-110:])
print("PASS")
