"""Per-family parity of gptrain against transformers 4.46.3 + torch (the references), for a tiny random
model of one family (gpt2, gpt2_relu2: GPT-2 with the squared-ReLU MLP, llama with GQA, llama31/llama32 with
rope_scaling "llama3" (3.2 tied), llama_linear / llama_yarn with rope_scaling "linear" / "yarn", gpt_neox with
partial rotary + parallel residual, gptj with interleaved rotary + shared-norm parallel residual + lm_head bias +
MLP-only linear biases, i.e. --disable-bias-attention; mixtral: 4 experts top-2 with the load-balancing loss in
training, whose logged value is also checked against transformers' load_balancing_loss_func; qwen2 /
qwen2_untied: QKV-only biases, tied / untied; qwen2_moe: a dense layer, then 4 experts top-2 without
renormalising and a gated shared expert, with the load-balancing loss as mixtral; mistral: a sliding window of 5
keys within the 16-token sequence, GQA and head_dim 24 != hidden / heads; qwen3: per-head Q/K RMSNorm, head_dim
!= hidden / heads, tied embeddings; qwen3_moe: the same attention, a dense layer then a sparse one routed with
norm_topk_prob false; transformers 4.46.3 has no Qwen3, so these two run against the torch reference of
qwen3_reference.py, which writes and reads transformers' names and config keys; gemma: GeGLU, 1 + w norms,
embeddings * sqrt(hidden), head dim != hidden / heads, tied):

  1. the HF model is saved with save_pretrained and converted with convert_from_hf;
  2. logits: gptrain_forward on the converted checkpoint vs the HF model on the same token ids,
     max |diff| over the real vocabulary <= --logits-tol;
  3. training: pretrain_gpt --load <converted> --finetune for a few iterations on a tiny .bin/.idx
     dataset (written here in the MMIDIDX format), vs the HF model trained with torch.optim.AdamW
     (Megatron's weight-decay groups: no decay on biases and norm weights; grad-norm clipping as
     Megatron; constant LR; dropout 0) on exactly the samples inspect_data lists in Megatron's order.
     Every iteration's loss must agree to --loss-rtol (relative); the trained weights, exported with
     convert_to_hf, must agree with torch's.

Prints one "parity:" line per measurement; exits non-zero with the numbers when a bound is broken."""
import argparse
import json
import os
import struct
import subprocess
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402

import lion_reference  # noqa: E402
import muon_reference  # noqa: E402
import qwen3_reference  # noqa: E402

VOCAB = 50257  # the GPT-2 BPE pretrain_gpt tokenizes with (its checkpoints pad to 50304 rows)
SEQ = 16       # training sequence length
POS = 64       # max positions of the HF models


# ---------------------------------------------------------------------------------------------------
# Tiny models and the pretrain_gpt flags describing the same architecture
# ---------------------------------------------------------------------------------------------------

def tiny_config(family):
    """(HF config, pretrain_gpt model flags) for one family. Sizes are chosen so that every switch
    matters: head dims > rotary dims, GQA groups < heads, ffn != 4h for SwiGLU."""
    common = ["--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4",
              "--max-position-embeddings", str(POS), "--seq-length", str(SEQ), "--norm-epsilon", "1e-5"]
    if family in ("gpt2", "gpt2_relu2"):
        relu2 = family == "gpt2_relu2"  # transformers' "relu2" is Megatron's --squared-relu
        cfg = transformers.GPT2Config(vocab_size=VOCAB, n_positions=POS, n_embd=64, n_layer=2, n_head=4,
                                      activation_function="relu2" if relu2 else "gelu_new", layer_norm_epsilon=1e-5,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True)
        flags = ["--position-embedding-type", "learned_absolute"] + (["--squared-relu"] if relu2 else ["--gelu", "tanh"])
    elif family == "llama":
        cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=POS,
                                       rms_norm_eps=1e-5, rope_theta=500000.0, hidden_act="silu",
                                       attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
                                       attention_dropout=0.0)
        flags = ["--normalization", "RMSNorm", "--swiglu", "--ffn-hidden-size", "96", "--group-query-attention",
                 "--num-query-groups", "2", "--position-embedding-type", "rope", "--rotary-base", "500000",
                 "--disable-bias-linear", "--untie-embeddings-and-output-weights"]
    elif family in ("llama31", "llama32"):
        # Llama-3.1 (untied) and 3.2 (tied, factor 32, head_dim 32 != hidden / heads): rope_scaling "llama3" with
        # an original length below POS, so that within SEQ positions one rotary pair keeps its frequency, some
        # are blended and the rest divided by the factor (3.2 with other low/high factors than Meta's 1 and 4).
        l31 = family == "llama31"
        scaling = {"rope_type": "llama3", "factor": 8.0 if l31 else 32.0, "low_freq_factor": 1.0 if l31 else 1.5,
                   "high_freq_factor": 4.0 if l31 else 6.0, "original_max_position_embeddings": 48 if l31 else 60}
        cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, head_dim=16 if l31 else 32,
                                       max_position_embeddings=POS, rms_norm_eps=1e-5, rope_theta=500000.0,
                                       rope_scaling=scaling, hidden_act="silu", attention_bias=False, mlp_bias=False,
                                       tie_word_embeddings=not l31, attention_dropout=0.0)
        flags = ["--normalization", "RMSNorm", "--swiglu", "--ffn-hidden-size", "96", "--group-query-attention",
                 "--num-query-groups", "2", "--kv-channels", "16" if l31 else "32", "--position-embedding-type", "rope",
                 "--rotary-base", "500000", "--disable-bias-linear", "--use-rope-scaling",
                 "--rope-scaling-factor", str(scaling["factor"]),
                 "--rope-scaling-low-freq-factor", str(scaling["low_freq_factor"]),
                 "--rope-scaling-high-freq-factor", str(scaling["high_freq_factor"]),
                 "--rope-scaling-original-max-position-embeddings", str(scaling["original_max_position_embeddings"])]
        if l31:
            flags.append("--untie-embeddings-and-output-weights")
    elif family in ("llama_linear", "llama_yarn"):
        # rope_scaling "linear" (positions / 4) and "yarn" (factor 4 over the original length POS, betas 16 / 2: pair
        # 0 keeps its frequency, pair 1 is blended, the rest interpolated; cos and sin scaled by 0.1 ln 4 + 1).
        linear = family == "llama_linear"
        scaling = ({"rope_type": "linear", "factor": 4.0} if linear else
                   {"rope_type": "yarn", "factor": 4.0, "beta_fast": 16.0, "beta_slow": 2.0})
        cfg = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=POS,
                                       rms_norm_eps=1e-5, rope_theta=10000.0, rope_scaling=scaling, hidden_act="silu",
                                       attention_bias=False, mlp_bias=False, tie_word_embeddings=False,
                                       attention_dropout=0.0)
        flags = ["--normalization", "RMSNorm", "--swiglu", "--ffn-hidden-size", "96", "--group-query-attention",
                 "--num-query-groups", "2", "--rotary-base", "10000", "--disable-bias-linear",
                 "--untie-embeddings-and-output-weights"]
        flags += (["--position-embedding-type", "rope", "--rotary-seq-len-interpolation-factor", "4"] if linear else
                  ["--position-embedding-type", "yarn", "--rotary-scaling-factor", "4",
                   "--yarn-original-max-position-embeddings", str(POS), "--yarn-beta-fast", "16", "--yarn-beta-slow", "2"])
    elif family == "gpt_neox":
        cfg = transformers.GPTNeoXConfig(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                         intermediate_size=256, hidden_act="gelu", rotary_pct=0.25,
                                         rotary_emb_base=10000, max_position_embeddings=POS, layer_norm_eps=1e-5,
                                         use_parallel_residual=True, tie_word_embeddings=False,
                                         attention_dropout=0.0, hidden_dropout=0.0)
        flags = ["--position-embedding-type", "rope", "--rotary-percent", "0.25", "--rotary-base", "10000",
                 "--parallel-residual", "two_norms", "--gelu", "erf", "--ffn-hidden-size", "256",
                 "--untie-embeddings-and-output-weights"]
    elif family == "gptj":
        cfg = transformers.GPTJConfig(vocab_size=VOCAB, n_positions=POS, n_embd=64, n_layer=2, n_head=4, rotary_dim=8,
                                      n_inner=None, activation_function="gelu_new", layer_norm_epsilon=1e-5,
                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=False)
        flags = ["--position-embedding-type", "rope", "--rotary-percent", "0.5", "--rotary-interleaved",
                 "--rotary-base", "10000", "--parallel-residual", "shared_norm", "--gelu", "tanh",
                 "--ffn-hidden-size", "256", "--untie-embeddings-and-output-weights", "--output-layer-bias",
                 "--disable-bias-attention"]
    elif family == "mixtral":
        cfg = transformers.MixtralConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=48, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=POS,
                                         rms_norm_eps=1e-5, rope_theta=1e6, num_local_experts=4, num_experts_per_tok=2,
                                         sliding_window=None, tie_word_embeddings=False, attention_dropout=0.0)
        flags = ["--normalization", "RMSNorm", "--swiglu", "--ffn-hidden-size", "48", "--group-query-attention",
                 "--num-query-groups", "2", "--position-embedding-type", "rope", "--rotary-base", "1000000",
                 "--disable-bias-linear", "--untie-embeddings-and-output-weights", "--num-experts", "4",
                 "--moe-router-topk", "2", "--moe-aux-loss-coeff", str(MIXTRAL_AUX_COEFF)]
    elif family in ("qwen2", "qwen2_untied"):
        tied = family == "qwen2"
        cfg = transformers.Qwen2Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=POS,
                                       rms_norm_eps=1e-5, rope_theta=100.0, use_sliding_window=False,
                                       tie_word_embeddings=tied, attention_dropout=0.0)
        flags = ["--normalization", "RMSNorm", "--swiglu", "--ffn-hidden-size", "96", "--group-query-attention",
                 "--num-query-groups", "2", "--position-embedding-type", "rope", "--rotary-base", "100",
                 "--disable-bias-linear", "--add-qkv-bias"] + ([] if tied else ["--untie-embeddings-and-output-weights"])
    elif family == "qwen2_moe":
        # Layer 0 dense (mlp_only_layers), layer 1 sparse: 4 experts top-2 without renormalising
        # (norm_topk_prob false = --moe-router-pre-softmax) and a shared expert with its sigmoid gate.
        cfg = transformers.Qwen2MoeConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=POS,
                                          rms_norm_eps=1e-5, rope_theta=100.0, num_experts=4, num_experts_per_tok=2,
                                          moe_intermediate_size=32, shared_expert_intermediate_size=48,
                                          norm_topk_prob=False, decoder_sparse_step=1, mlp_only_layers=[0],
                                          router_aux_loss_coef=MIXTRAL_AUX_COEFF, use_sliding_window=False,
                                          tie_word_embeddings=False, attention_dropout=0.0)
        flags = ["--normalization", "RMSNorm", "--swiglu", "--ffn-hidden-size", "96", "--group-query-attention",
                 "--num-query-groups", "2", "--position-embedding-type", "rope", "--rotary-base", "100",
                 "--disable-bias-linear", "--add-qkv-bias", "--untie-embeddings-and-output-weights",
                 "--num-experts", "4", "--moe-router-topk", "2", "--moe-layer-freq", "[0,1]",
                 "--moe-ffn-hidden-size", "32", "--moe-shared-expert-intermediate-size", "48",
                 "--moe-shared-expert-gate", "--moe-router-pre-softmax", "--moe-aux-loss-coeff", str(MIXTRAL_AUX_COEFF)]
    elif family == "mistral":
        # sliding_window 5 < SEQ: query t sees keys t-4..t, Megatron's --window-size 4,0.
        cfg = transformers.MistralConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                         num_attention_heads=4, num_key_value_heads=2, head_dim=24,
                                         max_position_embeddings=POS, rms_norm_eps=1e-5, rope_theta=10000.0,
                                         sliding_window=5, tie_word_embeddings=False, attention_dropout=0.0)
        flags = ["--normalization", "RMSNorm", "--swiglu", "--ffn-hidden-size", "96", "--group-query-attention",
                 "--num-query-groups", "2", "--kv-channels", "24", "--position-embedding-type", "rope",
                 "--rotary-base", "10000", "--window-size", "4,0", "--disable-bias-linear",
                 "--untie-embeddings-and-output-weights"]
    elif family in ("qwen3", "qwen3_moe"):
        # head_dim 32 with hidden 64 / 4 heads = 16: the Q/K norms and the attention see head_dim itself.
        sizes = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=2, head_dim=32, max_position_embeddings=POS, rms_norm_eps=1e-5,
                     rope_theta=1e6, initializer_range=0.02)
        flags = ["--normalization", "RMSNorm", "--qk-layernorm", "--swiglu", "--ffn-hidden-size", "96",
                 "--kv-channels", "32", "--group-query-attention", "--num-query-groups", "2",
                 "--position-embedding-type", "rope", "--rotary-base", "1000000", "--disable-bias-linear"]
        if family == "qwen3":
            cfg = qwen3_reference.qwen3_config(tie_word_embeddings=True, **sizes)
        else:
            # Layer 0 dense (mlp_only_layers), layer 1 sparse; norm_topk_prob false = --moe-router-pre-softmax;
            # no load-balancing loss (router_aux_loss_coef 0; its coefficient mapping is Mixtral's).
            cfg = qwen3_reference.qwen3_moe_config(tie_word_embeddings=False, num_experts=4, num_experts_per_tok=2,
                                                   moe_intermediate_size=48, mlp_only_layers=[0],
                                                   norm_topk_prob=False, router_aux_loss_coef=0.0, **sizes)
            flags += ["--untie-embeddings-and-output-weights", "--num-experts", "4", "--moe-router-topk", "2",
                      "--moe-ffn-hidden-size", "48", "--moe-layer-freq", "[0,1]", "--moe-router-pre-softmax"]
    elif family == "gemma":
        # head_dim 32 != hidden / heads, GQA (2 KV heads: the TP 2 run splits them; Gemma 2B's MQA cannot split
        # over TP), norms scaling by 1 + w (stored as w: --apply-layernorm-1p), GeGLU with the tanh GELU,
        # embeddings * sqrt(64), tied output layer.
        cfg = transformers.GemmaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                                       max_position_embeddings=POS, rms_norm_eps=1e-5, rope_theta=10000.0,
                                       hidden_activation="gelu_pytorch_tanh", attention_bias=False,
                                       tie_word_embeddings=True, attention_dropout=0.0)
        flags = ["--normalization", "RMSNorm", "--apply-layernorm-1p", "--geglu", "--ffn-hidden-size", "96",
                 "--kv-channels", "32", "--group-query-attention", "--num-query-groups", "2",
                 "--position-embedding-type", "rope", "--rotary-base", "10000", "--disable-bias-linear",
                 "--scale-embeddings-by-sqrt-hidden"]
    else:
        sys.exit(f"unknown family {family}")
    return cfg, common + flags


# Mixtral trains with Megatron's load-balancing loss: coefficient x the sum over layers of each layer's
# loss. The torch side computes each layer's with transformers' load_balancing_loss_func on that layer's
# router logits alone, which is K (top-k) times Megatron's (docs/moe-ops.md), so it divides by K.
MIXTRAL_AUX_COEFF = 0.05


MOE_FAMILIES = ("mixtral", "qwen2_moe")


def mixtral_balance_losses(m, tokens):
    """Per MoE layer, transformers' load-balancing loss of one micro-batch / K (= Megatron's, coefficient 1)."""
    if m.config.model_type == "qwen2_moe":
        from transformers.models.qwen2_moe.modeling_qwen2_moe import load_balancing_loss_func
        E = m.config.num_experts
    else:
        from transformers.models.mixtral.modeling_mixtral import load_balancing_loss_func
        E = m.config.num_local_experts
    out = m(input_ids=tokens, output_router_logits=True)
    K = m.config.num_experts_per_tok
    return out, [load_balancing_loss_func((rl,), E, K) / K for rl in out.router_logits]


def tiny_model(family, seed):
    cfg, _ = tiny_config(family)
    if isinstance(cfg, dict):  # a family transformers 4.46.3 lacks: the torch reference
        m = qwen3_reference.Qwen3ForCausalLM(cfg, seed)
    else:
        cfg._attn_implementation = "eager"  # torch 1.13 has no SDPA; be explicit
        torch.manual_seed(seed)
        m = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    with torch.no_grad():
        for n, p in m.named_parameters():
            if p.dim() == 1:  # non-trivial norm weights and biases, so a swapped or dropped tensor shows
                # (Gemma's norm weights are w of a 1 + w scale)
                one = 1.0 if n.endswith("weight") and family != "gemma" else 0.0
                p.copy_(torch.randn_like(p) * 0.1 + one)
            else:  # std 0.1 instead of 0.02: logits of a few units, attention far from uniform
                p.mul_(5.0)
    return m.float().eval()


# ---------------------------------------------------------------------------------------------------
# Running gptrain
# ---------------------------------------------------------------------------------------------------

def run(args, log=None):
    p = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if log:
        with open(log, "w") as f:
            f.write(p.stdout)
    if p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args)} exited {p.returncode}:\n{p.stdout[-6000:]}")
    return p.stdout


def write_mmidx(prefix, docs):
    """Megatron's MMIDIDX v1 pair: prefix.bin (uint16 tokens) + prefix.idx (header, sequence lengths,
    byte pointers, document indices), one sequence per document."""
    lens = np.array([len(d) for d in docs], dtype=np.int32)
    ptrs = np.concatenate([[0], np.cumsum(lens[:-1].astype(np.int64) * 2)]).astype(np.int64)
    doc_idx = np.arange(len(docs) + 1, dtype=np.int64)
    with open(prefix + ".bin", "wb") as f:
        for d in docs:
            f.write(np.asarray(d, dtype=np.uint16).tobytes())
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", 8))  # dtype code 8 = uint16
        f.write(struct.pack("<Q", len(docs)))
        f.write(struct.pack("<Q", len(doc_idx)))
        f.write(lens.tobytes())
        f.write(ptrs.tobytes())
        f.write(doc_idx.tobytes())


def read_logits(path, T):
    """gptrain_forward's output: safetensors with "logits" (T, vocab) F32, padded columns dropped."""
    with safe_open(path, framework="pt") as sf:
        x = sf.get_tensor("logits")
    if x.dtype != torch.float32 or tuple(x.shape) != (T, VOCAB):
        sys.exit(f"FAIL: {path}: logits {x.dtype}{tuple(x.shape)}, expected float32 ({T}, {VOCAB})")
    return x


def read_losses(metrics_file, iters):
    """Per-iteration 'lm loss' from pretrain_gpt's JSONL metrics ({"event": "train", "iteration": i,
    "losses": {"lm loss": x}, ...} per log line; --log-interval 1)."""
    return read_losses_from(metrics_file, 1, iters)


def read_losses_from(metrics_file, first, last):
    """read_losses of iterations first..last."""
    out = {}
    for line in open(metrics_file):
        j = json.loads(line)
        if j.get("event") == "train" and "lm loss" in j.get("losses", {}):
            out[int(j["iteration"])] = float(j["losses"]["lm loss"])
    missing = [i for i in range(first, last + 1) if i not in out]
    if missing:
        sys.exit(f"FAIL: {metrics_file}: no 'lm loss' for iterations {missing}; have {sorted(out)}")
    return [out[i] for i in range(first, last + 1)]


def load_weight_set(d):
    index = os.path.join(d, "model.safetensors.index.json")
    files = ["model.safetensors"]
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    out = {}
    for f in files:
        with safe_open(os.path.join(d, f), framework="pt") as sf:
            for k in sf.keys():
                out[k] = sf.get_tensor(k)
    return out


# ---------------------------------------------------------------------------------------------------
# The torch side of training
# ---------------------------------------------------------------------------------------------------

def torch_train(m, batches, lr, wd, betas, eps, clip, micro, optimizer="adam", sgd_momentum=0.9):
    """batches: per iteration, a list of micro-batches (tokens, labels) int64 (B, T). Returns the
    iteration losses (mean over micro-batches of the token-mean cross entropy, as Megatron with equal
    token counts). optimizer: adam (torch.optim.AdamW), sgd (torch.optim.SGD with momentum, Megatron's
    --optimizer sgd), muon or lion (lion_reference.Lion with Adam's betas on Muon's matrices, AdamW on the rest,
    as Megatron's --optimizer lion)."""
    m.train()
    params = [p for p in m.parameters() if p.requires_grad]  # tied weights appear once
    decay = [p for p in params if p.dim() >= 2]  # Megatron: biases and norm weights are not decayed
    no_decay = [p for p in params if p.dim() < 2]
    muon = None
    if optimizer == "muon":  # Megatron's Muon for the matrices, AdamW for the rest
        mats = muon_reference.llama_muon_groups(m)
        muon = muon_reference.Muon(mats, lr, wd)
        taken = {id(p) for g in mats for p in g}
        decay = [p for p in decay if id(p) not in taken]
    lion = None
    if optimizer == "lion":
        mats = [p for g in muon_reference.llama_muon_groups(m) for p in g]
        lion = lion_reference.Lion(mats, lr, wd, betas)
        taken = {id(p) for p in mats}
        decay = [p for p in decay if id(p) not in taken]
    groups = [{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}]
    if optimizer == "sgd":
        opt = torch.optim.SGD(groups, lr=lr, momentum=sgd_momentum)
    else:
        opt = torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps)
    names = {id(p): n for n, p in m.named_parameters()}
    gmax = {names[id(p)]: torch.zeros_like(p) for p in params}  # largest |grad| each element saw
    losses = []
    for it in batches:
        m.zero_grad(set_to_none=False)  # every parameter, Muon's matrices included
        total = 0.0
        for tokens, labels in it:
            aux = 0.0
            if m.config.model_type in MOE_FAMILIES:
                out, balance = mixtral_balance_losses(m, tokens)
                logits, aux = out.logits, MIXTRAL_AUX_COEFF * sum(balance)
            else:
                logits = m(input_ids=tokens).logits
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1))
            ((loss + aux) / micro).backward()
            total += loss.item() / micro
        for p in params:
            torch.maximum(gmax[names[id(p)]], p.grad.abs(), out=gmax[names[id(p)]])
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        if muon:
            muon.step()
        if lion:
            lion.step()
        losses.append(total)
    m.eval()
    return losses, gmax


# ---------------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", required=True, choices=["gpt2", "gpt2_relu2", "llama", "gpt_neox", "gptj", "mixtral", "llama31",
                                                               "llama32", "llama_linear", "llama_yarn", "qwen2", "qwen2_untied", "qwen2_moe", "mistral",
                                                               "qwen3", "qwen3_moe", "gemma"])
    ap.add_argument("--bin", required=True, help="build/bin")
    ap.add_argument("--tmp", required=True, help="scratch directory (must exist, empty)")
    ap.add_argument("--logits-tol", type=float, default=1e-5)
    ap.add_argument("--loss-rtol", type=float, default=1e-5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--parts", default="logits,train", help="logits (always run) and/or train")
    ap.add_argument("--weights-big-fraction", type=float, default=1e-5,
                    help="trained weights: the fraction of elements allowed to differ by > 1e-6")
    ap.add_argument("--launcher", default="", help="run pretrain_gpt under this, e.g. 'mpirun -np 2'")
    ap.add_argument("--parallel", default="", help="extra pretrain_gpt flags, e.g. '--tensor-model-parallel-size 2'")
    ap.add_argument("--optimizer", default="adam", choices=["adam", "sgd", "muon", "lion"],
                    help="pretrain_gpt --optimizer, against torch.optim.AdamW, torch.optim.SGD (momentum 0.9, a "
                         "larger LR so that the loss moves) or muon_reference.py's Muon + AdamW (Llama-layout "
                         "families, fp32 Newton-Schulz)")
    ap.add_argument("--resume-at", type=int, default=0,
                    help="train in two runs: stop after this iteration (--exit-interval, saved), then resume with "
                         "--load from the saved checkpoint; the losses of both runs are compared as one")
    a = ap.parse_args()
    torch.set_num_threads(2)
    B = lambda n: os.path.join(a.bin, n)  # noqa: E731
    T = lambda n: os.path.join(a.tmp, n)  # noqa: E731
    fam = a.family
    _, model_flags = tiny_config(fam)
    failures = []

    # ---- 1. tiny HF model -> gptrain checkpoint ----
    hf_dir, ckpt = T("hf"), T("ckpt")
    m = tiny_model(fam, seed=1234)
    m.save_pretrained(hf_dir, safe_serialization=True)
    # A run with --apply-layernorm-1p loads a checkpoint converted for it.
    one_p = ["--apply-layernorm-1p"] if "--apply-layernorm-1p" in model_flags else []
    run([B("convert_from_hf"), "--load", hf_dir, "--save", ckpt, *one_p], log=T("convert_from_hf.log"))
    meta = json.load(open(os.path.join(ckpt, "release", "metadata.json")))
    recorded = {"llama31": "llama", "llama32": "llama", "llama_linear": "llama", "llama_yarn": "llama",
                "qwen2_untied": "qwen2", "gpt2_relu2": "gpt2"}.get(fam, fam)  # variants of a family record the family
    if meta["model"].get("family") != recorded:
        sys.exit(f"FAIL: converted checkpoint says family {meta['model'].get('family')!r}, expected {recorded!r}")

    # ---- 2. logits ----
    g = torch.Generator().manual_seed(7)
    tokens = torch.randint(0, VOCAB, (2, SEQ), generator=g)
    rows = []
    for b in range(tokens.shape[0]):
        out = T(f"logits{b}.safetensors")
        run([B("gptrain_forward"), "--load", ckpt, "--tokens", ",".join(map(str, tokens[b].tolist())),
             "--output", out], log=T(f"gptrain_forward{b}.log"))
        rows.append(read_logits(out, SEQ))
    ours = torch.stack(rows)
    with torch.no_grad():
        ref = m(input_ids=tokens).logits.float()
    d = (ours - ref).abs().max().item()
    scale = ref.abs().max().item()
    print(f"parity: {fam}: logits max |diff| {d:.3e} (max |logit| {scale:.3f}, bound {a.logits_tol:g})")
    if not d <= a.logits_tol:
        failures.append(f"logits max |diff| {d:.3e} > {a.logits_tol:g}")

    if "train" not in a.parts.split(","):
        if failures:
            sys.exit(f"FAIL: {fam}: " + "; ".join(failures))
        print(f"ok: {fam}: logits agree with transformers (training not run: --parts {a.parts})")
        return

    # ---- 3. training ----
    # Documents over 64 token ids spread across the vocabulary: learnable within a few steps, so the
    # losses move and a wrong update shows.
    rng = np.random.default_rng(11)
    alphabet = rng.choice(VOCAB, size=64, replace=False)
    docs = [alphabet[rng.integers(0, 64, size=int(n))].tolist() for n in rng.integers(20, 90, size=12)]
    prefix = T("corpus_text_document")
    write_mmidx(prefix, docs)
    mbs, gbs, iters = 2, 4, a.iters
    micro = gbs // mbs
    lr, wd, b1, b2, eps, clip = 3e-3, 0.1, 0.9, 0.95, 1e-8, 1.0
    sgd_momentum = 0.9
    opt_flags = []
    if a.optimizer == "sgd":
        lr = 0.1
        opt_flags = ["--optimizer", "sgd", "--sgd-momentum", str(sgd_momentum)]
    elif a.optimizer == "muon":
        opt_flags = ["--optimizer", "muon", "--muon-fp32-matmul-prec", "high"]
    elif a.optimizer == "lion":
        lr = 1e-4  # Lion's sign steps move every weight by lr: a smaller LR than Adam's
        opt_flags = ["--optimizer", "lion"]
    data_flags = ["--data-path", prefix, "--split", "100,0,0", "--seed", "1234", "--data-cache-path", T("cache")]
    out = run([B("inspect_data"), "samples", "--data-path", prefix, "--split", "100,0,0", "--seed", "1234",
               "--data-cache-path", T("cache"), "--seq-length", str(SEQ), "--train-samples", str(iters * gbs)])
    samples = [list(map(int, ln.split()[2:])) for ln in out.splitlines() if ln.startswith("train ")]
    if len(samples) < iters * gbs or any(len(s) != SEQ + 1 for s in samples):
        sys.exit(f"FAIL: inspect_data listed {len(samples)} train samples, need {iters * gbs} of {SEQ + 1} tokens")
    win = torch.tensor(samples[: iters * gbs], dtype=torch.long).view(iters, micro, mbs, SEQ + 1)
    batches = [[(win[i, k, :, :SEQ], win[i, k, :, 1:]) for k in range(micro)] for i in range(iters)]

    save = T("trained")
    train_flags = [*a.parallel.split(), *model_flags, "--micro-batch-size", str(mbs), "--global-batch-size", str(gbs),
                   "--train-iters", str(iters), "--lr", str(lr), "--lr-decay-style", "constant", "--weight-decay",
                   str(wd), "--adam-beta1", str(b1), "--adam-beta2", str(b2), "--adam-eps", str(eps), "--clip-grad",
                   str(clip), *opt_flags, "--hidden-dropout", "0", "--attention-dropout", "0", *data_flags, "--eval-iters", "0",
                   "--log-interval", "1", "--save", save, "--save-interval", str(iters), "--device", "cpu"]
    pretrain = [*a.launcher.split(), B("pretrain_gpt")]
    if a.resume_at:
        # The first run stops after --resume-at (saving there); the second resumes it as Megatron resumes:
        # --load of its own --save, optimizer state and data position restored, no --finetune.
        if not 0 < a.resume_at < iters:
            sys.exit(f"FAIL: --resume-at {a.resume_at} must lie in (0, {iters})")
        run([*pretrain, *train_flags, "--load", ckpt, "--finetune", "--exit-interval", str(a.resume_at),
             "--metrics-file", T("metrics_first.jsonl")], log=T("pretrain_gpt_first.log"))
        run([*pretrain, *train_flags, "--load", save, "--metrics-file", T("metrics.jsonl")],
            log=T("pretrain_gpt.log"))
        first = read_losses(T("metrics_first.jsonl"), a.resume_at)
        resumed = read_losses_from(T("metrics.jsonl"), a.resume_at + 1, iters)
        ours_losses = first + resumed
        print(f"parity: {fam}: resumed after iteration {a.resume_at} from {save}")
    else:
        run([*pretrain, *train_flags, "--load", ckpt, "--finetune", "--metrics-file", T("metrics.jsonl")],
            log=T("pretrain_gpt.log"))
        ours_losses = read_losses(T("metrics.jsonl"), iters)

    if fam in MOE_FAMILIES:
        # Iteration 1's logged value: in the first of the two runs when resumed.
        failures += check_balance_loss(m, batches[0], T("metrics_first.jsonl" if a.resume_at else "metrics.jsonl"))
    ref_losses, gmax = torch_train(m, batches, lr, wd, (b1, b2), eps, clip, micro, a.optimizer, sgd_momentum)
    rel = [abs(x - y) / abs(y) for x, y in zip(ours_losses, ref_losses)]
    print(f"parity: {fam}: training losses gptrain {['%.7f' % x for x in ours_losses]}")
    print(f"parity: {fam}: training losses torch   {['%.7f' % x for x in ref_losses]}")
    print(f"parity: {fam}: training loss max relative diff {max(rel):.3e} over {iters} iterations "
          f"(bound {a.loss_rtol:g}); loss moved {ref_losses[0] - ref_losses[-1]:+.4f}")
    if not max(rel) <= a.loss_rtol:
        failures.append(f"training loss relative diff {max(rel):.3e} > {a.loss_rtol:g}")
    if not ref_losses[0] - ref_losses[-1] > 1e-2:
        failures.append("the loss did not move: the training comparison would not see a wrong update")

    # ---- 4. trained weights, exported back to HF with convert_to_hf ----
    back = T("trained_hf")
    gpt2_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "data", "gpt2")
    run([B("convert_to_hf"), "--load", save, "--output", back, "--vocab-file", os.path.join(gpt2_dir, "vocab.json"),
         "--merge-file", os.path.join(gpt2_dir, "merges.txt")], log=T("convert_to_hf.log"))
    if fam == "gpt2_relu2":  # the activation goes back out under transformers' name
        act = json.load(open(os.path.join(back, "config.json"))).get("activation_function")
        if act != "relu2":
            failures.append(f"convert_to_hf wrote activation_function {act!r}, expected 'relu2'")
    got = load_weight_set(back)
    want = {k: v.detach() for k, v in m.state_dict().items() if k in got or not _is_buffer(m, k)}
    if set(got) != set(want):
        failures.append(f"trained tensor names differ: only gptrain {sorted(set(got) - set(want))[:4]}, "
                        f"only torch {sorted(set(want) - set(got))[:4]}")
    else:
        failures += compare_trained(fam, got, want, gmax, lr, a.weights_big_fraction)

    if failures:
        sys.exit(f"FAIL: {fam}: " + "; ".join(failures))
    ref_opt = {"sgd": "torch.optim.SGD", "muon": "muon_reference.Muon + torch.optim.AdamW",
               "lion": "lion_reference.Lion + torch.optim.AdamW"}.get(a.optimizer, "torch.optim.AdamW")
    print(f"ok: {fam}: logits, training losses and trained weights agree with transformers + {ref_opt}")


def check_balance_loss(m, first_batches, metrics_file):
    """Iteration 1's logged load_balancing_loss (Megatron: each layer's loss with coefficient 1, averaged over
    the micro-batches, then over the MoE layers) against transformers' load_balancing_loss_func / K."""
    per_mb, pooled = [], []
    with torch.no_grad():
        for tokens, _ in first_batches:
            out, layers = mixtral_balance_losses(m, tokens)
            per_mb.append(sum(layers) / len(layers))  # the MoE layers' mean
            pooled.append(float(out.aux_loss))  # transformers' own: one loss over all layers' tokens
    ref = float(sum(per_mb) / len(per_mb))
    ours = None
    for line in open(metrics_file):
        j = json.loads(line)
        if j.get("event") == "train" and int(j["iteration"]) == 1:
            ours = j["losses"].get("load_balancing_loss")
    if ours is None:
        return ["no load_balancing_loss logged at iteration 1"]
    rel = abs(ours - ref) / abs(ref)
    print(f"parity: {m.config.model_type}: load_balancing_loss at iteration 1: gptrain {ours:.7f}, transformers / K {ref:.7f} "
          f"(relative diff {rel:.2e}; transformers' own value is K = {m.config.num_experts_per_tok} times it)")
    K, L = m.config.num_experts_per_tok, m.config.num_hidden_layers
    print(f"parity: {m.config.model_type}: transformers' model aux_loss (all {L} layers' tokens pooled into one loss) "
          f"{sum(pooled) / len(pooled):.7f} vs K x the mean of the per-layer losses {K * ref:.7f}: the two "
          f"definitions differ when the layers route differently")
    return [] if rel <= 1e-5 else [f"load_balancing_loss relative diff {rel:.3e} > 1e-5"]


def compare_trained(fam, got, want, gmax, lr, big_fraction=1e-5):
    """Trained weights, element by element. Elements whose gradient was zero up to rounding in every
    iteration (|g| < 1e-8 = Adam's eps; e.g. the key biases without rotary, which shift every score
    of a query equally and so cannot change the softmax) are left out: Adam turns their rounding
    noise into updates of order lr, differently in any two implementations. Of the rest, none may
    differ by 5% of one step's LR, and no more than 1e-5 of them by more than 1e-6 (a few elements
    whose gradient nearly cancels within a batch amplify rounding the same way)."""
    worst, worst_name, n, n_big, n_zero = 0.0, "", 0, 0, 0
    for k in sorted(got):
        d = (got[k].float() - want[k].float()).abs()
        zero = gmax[k] < 1e-8 if k in gmax else torch.zeros_like(d, dtype=torch.bool)
        zero &= want[k].ne(got[k])  # untouched rows (unused embeddings) agree anyway: keep them
        n_zero += int(zero.sum())
        d = d[~zero]
        n += d.numel()
        n_big += int((d > 1e-6).sum())
        if d.numel() and d.max().item() > worst:
            worst, worst_name = d.max().item(), k
    print(f"parity: {fam}: trained weights max |diff| {worst:.3e} ({worst_name}); {n_big} of {n:,} elements "
          f"differ by > 1e-6; {n_zero} elements with a numerically zero gradient left out")
    out = []
    if not worst <= 0.05 * lr:
        out.append(f"trained weight {worst_name} differs by {worst:.3e} > {0.05 * lr:.1e} (5% of one step's LR)")
    if n_big > big_fraction * n:
        out.append(f"{n_big} trained weight elements differ by > 1e-6 (allowed {int(big_fraction * n)})")
    return out


def _is_buffer(m, name):
    return name in dict(m.named_buffers()) or name == "lm_head.weight" and m.config.tie_word_embeddings


if __name__ == "__main__":
    main()
