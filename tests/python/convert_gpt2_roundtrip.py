"""GPT-2 conversion against transformers 4.46.3 / torch / safetensors (the references):
  1. a tiny random GPT2LMHeadModel saved by save_pretrained -> convert_from_hf -> convert_to_hf
     gives back every tensor bitwise identical (fp32), for a tied and an untied model, with
     erf and tanh GELU;
  2. the converted directory loads with AutoModelForCausalLM / AutoTokenizer offline and gives the
     same logits as the original model; generate() runs;
  3. --dtype bf16/fp16 write exactly torch's .to(dtype) of the fp32 weights;
  4. --max-shard-size splits into shards + index that transformers loads;
  5. malformed inputs are rejected with a message (bad header length, bad JSON, missing tensor,
     wrong shape, unknown model_type, truncated data)."""
import json
import os
import shutil
import struct
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
import torch  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel  # noqa: E402

from convert_common import assert_identical, convert_argparser, load_weight_set, patch_generate_for_debian_torch, run  # noqa: E402

patch_generate_for_debian_torch()

a = convert_argparser(tokenizer=True).parse_args()
B = lambda n: os.path.join(a.bin, n)  # noqa: E731
T = lambda n: os.path.join(a.tmp, n)  # noqa: E731


def tiny(tie, act, seed):
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=50257, n_positions=64, n_embd=64, n_layer=2, n_head=4, activation_function=act,
                     tie_word_embeddings=tie, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    m = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():  # non-trivial norms and biases so a swapped tensor shows
        for n, p in m.named_parameters():
            if p.dim() == 1:
                p.copy_(torch.randn_like(p) * 0.1 + (1.0 if n.endswith("weight") else 0.0))
    return m


def roundtrip(name, tie, act):
    src, ck, out = T(name + "_hf"), T(name + "_ckpt"), T(name + "_back")
    m = tiny(tie, act, seed=len(name))
    m.save_pretrained(src, safe_serialization=True)
    run([B("convert_from_hf"), "--load", src, "--save", ck])
    meta = json.load(open(os.path.join(ck, "release", "metadata.json")))
    assert open(os.path.join(ck, "latest_checkpointed_iteration.txt")).read() == "release"
    assert meta["model"]["padded_vocab_size"] == 50304 and meta["model"]["vocab_size"] == 50257, meta["model"]
    assert meta["model"]["gelu"] == ("tanh" if act == "gelu_new" else "erf")
    run([B("convert_to_hf"), "--load", ck, "--output", out, "--vocab-file", a.vocab, "--merge-file", a.merges])
    assert_identical(load_weight_set(src), load_weight_set(out), f"{name}: HF -> gptrain -> HF")
    cfg = json.load(open(os.path.join(out, "config.json")))
    assert cfg["activation_function"] == act and cfg["tie_word_embeddings"] == tie, cfg
    m2 = AutoModelForCausalLM.from_pretrained(out).eval()
    tok = AutoTokenizer.from_pretrained(out)
    ids = tok("Hello world, this is gptrain converting GPT-2.", return_tensors="pt").input_ids
    assert ids.shape[1] > 5
    with torch.no_grad():
        d = (m(ids).logits - m2(ids).logits).abs().max().item()
    assert d == 0.0, f"{name}: logits differ by {d}"
    g = m2.generate(ids, max_new_tokens=5, do_sample=False, pad_token_id=tok.eos_token_id)
    assert g.shape[1] == ids.shape[1] + 5
    print(f"ok: {name}: transformers loads the conversion; logits identical; generate ran: {tok.decode(g[0][-5:])!r}")
    return m, ck


m, ck = roundtrip("tied_tanh", True, "gelu_new")
roundtrip("untied_erf", False, "gelu")

# dtypes: exactly torch's rounding of the fp32 weights
ref = load_weight_set(T("tied_tanh_hf"))
for flag, dt in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
    out = T("tied_" + flag)
    run([B("convert_to_hf"), "--load", ck, "--output", out, "--dtype", flag, "--vocab-file", a.vocab, "--merge-file", a.merges])
    assert_identical({k: v.to(dt) for k, v in ref.items()}, load_weight_set(out), f"--dtype {flag} vs torch .to({dt})")
    assert json.load(open(os.path.join(out, "config.json")))["torch_dtype"] == str(dt).replace("torch.", "")
    AutoModelForCausalLM.from_pretrained(out)

# sharding
out = T("tied_sharded")
run([B("convert_to_hf"), "--load", ck, "--output", out, "--max-shard-size", "200KB", "--vocab-file", a.vocab, "--merge-file", a.merges])
index = json.load(open(os.path.join(out, "model.safetensors.index.json")))
shards = sorted(set(index["weight_map"].values()))
assert len(shards) >= 3 and not os.path.exists(os.path.join(out, "model.safetensors")), shards
assert index["metadata"]["total_size"] == sum(v.numel() * 4 for v in ref.values())
assert_identical(ref, load_weight_set(out), "sharded output")
with torch.no_grad():
    ids = torch.tensor([[1, 2, 3, 50256]])
    assert (AutoModelForCausalLM.from_pretrained(out)(ids).logits == m(ids).logits).all()
print(f"ok: --max-shard-size 200KB: {len(shards)} shards + index, transformers loads them")
# a sharded HF directory written by transformers (index + shards) converts to the same checkpoint
sh = T("tied_hf_sharded")
m.save_pretrained(sh, safe_serialization=True, max_shard_size="200KB")
assert os.path.exists(os.path.join(sh, "model.safetensors.index.json"))
run([B("convert_from_hf"), "--load", sh, "--save", T("tied_ckpt_from_shards")])
assert_identical(load_file(os.path.join(ck, "release", "model_tp00_pp000.safetensors")),
                 load_file(T("tied_ckpt_from_shards/release/model_tp00_pp000.safetensors")), "checkpoint from sharded HF input")
# re-running into the same output replaces it (fewer shards now)
run([B("convert_to_hf"), "--load", ck, "--output", out, "--vocab-file", a.vocab, "--merge-file", a.merges])
assert sorted(os.listdir(out)) == sorted(["config.json", "generation_config.json", "merges.txt", "model.safetensors",
                                          "special_tokens_map.json", "tokenizer_config.json", "vocab.json"]), os.listdir(out)


# malformed inputs
def bad_copy(name):
    d = T("bad_" + name)
    shutil.copytree(T("tied_tanh_hf"), d)
    return d


def expect_fail(d, *needles):
    _, msg = run([B("convert_from_hf"), "--load", d, "--save", T("bad_ckpt")], expect_ok=False)
    for n in needles:
        assert n in msg, f"expected {n!r} in the error message, got:\n{msg}"
    print(f"ok: rejected {os.path.basename(d)}: {msg.strip().splitlines()[-1][:150]}")


st = lambda d: os.path.join(d, "model.safetensors")  # noqa: E731
d = bad_copy("header_len")
raw = bytearray(open(st(d), "rb").read())
raw[0:8] = struct.pack("<Q", len(raw) + 10)
open(st(d), "wb").write(raw)
expect_fail(d, "model.safetensors", "header length")

d = bad_copy("json")
raw = bytearray(open(st(d), "rb").read())
n = struct.unpack("<Q", raw[:8])[0]
raw[8 + bytes(raw[8:8 + n]).rstrip(b" ").rindex(b"}")] = ord(",")  # unterminated object
open(st(d), "wb").write(raw)
expect_fail(d, "model.safetensors", "JSON")

d = bad_copy("truncated")
raw = open(st(d), "rb").read()
open(st(d), "wb").write(raw[:-100])
expect_fail(d, "model.safetensors", "data section")

w = {k: v.contiguous() for k, v in ref.items()}
d = bad_copy("missing")
save_file({k: v for k, v in w.items() if k != "transformer.h.1.mlp.c_fc.bias"}, st(d), metadata={"format": "pt"})
expect_fail(d, "transformer.h.1.mlp.c_fc.bias", "missing")

d = bad_copy("shape")
w2 = dict(w)
w2["transformer.h.0.attn.c_attn.weight"] = w["transformer.h.0.attn.c_attn.weight"].t().contiguous()
save_file(w2, st(d), metadata={"format": "pt"})
expect_fail(d, "transformer.h.0.attn.c_attn.weight", "(192, 64)", "(64, 192)")

d = bad_copy("extra")
w3 = dict(w)
w3["transformer.h.0.attn.q_norm.weight"] = torch.ones(64)
save_file(w3, st(d), metadata={"format": "pt"})
expect_fail(d, "transformer.h.0.attn.q_norm.weight")

d = bad_copy("model_type")
cfg = json.load(open(os.path.join(d, "config.json")))
cfg["model_type"] = "bert"
json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
expect_fail(d, "bert", "supported", "config.json")

# old-transformers causal-mask buffers (BOOL/U8 / F32 tensors) are read and ignored
d = bad_copy("buffers")
w4 = dict(w)
w4["transformer.h.0.attn.bias"] = torch.tril(torch.ones(1, 1, 64, 64, dtype=torch.bool))
w4["transformer.h.0.attn.masked_bias"] = torch.tensor(-1e4)
save_file(w4, st(d), metadata={"format": "pt"})
run([B("convert_from_hf"), "--load", d, "--save", T("buffers_ckpt"), "--iteration", "0"])
assert open(T("buffers_ckpt/latest_checkpointed_iteration.txt")).read() == "0"
print("ok: BOOL / scalar buffers written by the safetensors package are parsed and skipped")

# a gptrain checkpoint missing a tensor, or with a wrong shape, is refused by convert_to_hf
for what, edit, needles in (("missing", lambda t: t.pop("decoder.layers.1.mlp.linear_fc2.bias"), ["decoder.layers.1.mlp.linear_fc2.bias"]),
                            ("shape", lambda t: t.__setitem__("decoder.final_layernorm.weight", torch.ones(65)), ["(65,)", "(64,)"])):
    bad = T("bad_ckpt_" + what)
    shutil.copytree(ck, bad)
    f = os.path.join(bad, "release", "model_tp00_pp000.safetensors")
    t = load_file(f)
    edit(t)
    save_file(t, f, metadata={"format": "pt"})
    _, msg = run([B("convert_to_hf"), "--load", bad, "--output", T("x"), "--vocab-file", a.vocab, "--merge-file", a.merges], expect_ok=False)
    assert all(n in msg for n in needles), msg
    print(f"ok: convert_to_hf refused a checkpoint with a {what} tensor: {msg.strip().splitlines()[-1][-100:]}")

# a bad checkpoint step and a missing tokenizer are clear errors
_, msg = run([B("convert_to_hf"), "--load", ck, "--ckpt-step", "7", "--output", T("x")], expect_ok=False)
assert "iter_0000007" in msg, msg
_, msg = run([B("convert_to_hf"), "--load", ck, "--output", T("x")], expect_ok=False)
assert "--vocab-file" in msg, msg
assert not os.path.exists(T("x"))
print("PASS")
