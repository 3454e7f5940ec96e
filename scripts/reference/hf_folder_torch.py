#!/usr/bin/python3
"""Hugging Face model folders with random weights, and their logits from the PyTorch references,
for the trainer's import parity test (tests/app/test_hf_logits_parity.cpp).

Writes DIR/config.json and DIR/model.safetensors the way transformers' save_pretrained lays them
out, written here from the formats' definitions and not from the trainer's C++ writer:
  - safetensors: an 8-byte little-endian header length, a JSON header {name: {dtype, shape,
    data_offsets: [begin, end]}, "__metadata__": {...}} padded with spaces, then the raw
    little-endian data of every tensor;
  - llama: LlamaForCausalLM's names (model.embed_tokens.weight, model.layers.N.self_attn.q_proj.
    weight, ...), nn.Linear weights (out, in), q/k rows in the rotate-half layout transformers
    uses (what llama_torch.py computes with);
  - gpt2: GPT2LMHeadModel's names, optionally with the "transformer." prefix, Conv1D weights
    stored (in, out) (y = x @ W + b), the attention-mask buffers h.N.attn.bias saved beside
    them, and optionally the tied head lm_head.weight repeated.
Weights are drawn in fp32 and rounded to the spec's dtype (F32, BF16 or F16); the logits are
those of gpt2_torch.gpt2_logits / llama_torch.llama_logits on the rounded values, in float64.

Spec (JSON):
  family      "gpt2" | "llama"
  config      llama: llama_torch.py's config keys plus max_seq_len; gpt2: n_layer, n_head,
              d_model, vocab_size, max_seq_len
  dtype       "F32" | "BF16" | "F16"
  prefix      "" | "transformer." (gpt2 only)
  lm_head     true: a gpt2 folder also holds lm_head.weight, equal to wte.weight
  seed        torch.manual_seed of the weights
  tokens      [id, ...] one sequence
  dir         the folder written
  out_logits  raw little-endian float32 (len(tokens), vocab_size)

Run with Debian's interpreter: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 hf_folder_torch.py SPEC
"""
import json

import torch

from gpt2_torch import gpt2_logits, read_spec
from llama_torch import inv_freq, llama_logits

DTYPES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}


def llama_tensors(cfg):
    """(name, shape, kind) in LlamaForCausalLM's order; kind: matrix, embedding or norm."""
    C, H, Hkv, F = cfg["d_model"], cfg["n_head"], cfg["n_kv_head"], cfg["ffn_dim"]
    D, V = C // H, cfg["vocab_size"]
    out = [("model.embed_tokens.weight", (V, C), "embedding")]
    for l in range(cfg["n_layer"]):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", (C,), "norm"),
                (p + "self_attn.q_proj.weight", (H * D, C), "matrix"),
                (p + "self_attn.k_proj.weight", (Hkv * D, C), "matrix"),
                (p + "self_attn.v_proj.weight", (Hkv * D, C), "matrix"),
                (p + "self_attn.o_proj.weight", (C, H * D), "matrix"),
                (p + "post_attention_layernorm.weight", (C,), "norm"),
                (p + "mlp.gate_proj.weight", (F, C), "matrix"),
                (p + "mlp.up_proj.weight", (F, C), "matrix"),
                (p + "mlp.down_proj.weight", (C, F), "matrix")]
    out.append(("model.norm.weight", (C,), "norm"))
    if not cfg["tie_embeddings"]:
        out.append(("lm_head.weight", (V, C), "matrix"))
    return out


CONV1D = ("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")


def gpt2_tensors(cfg):
    """(name without prefix, shape as stored, kind); kind: matrix, embedding, norm or bias."""
    C, V, P = cfg["d_model"], cfg["vocab_size"], cfg["max_seq_len"]
    out = [("wte.weight", (V, C), "embedding"), ("wpe.weight", (P, C), "embedding")]
    for l in range(cfg["n_layer"]):
        p = f"h.{l}."
        out += [(p + "ln_1.weight", (C,), "norm"), (p + "ln_1.bias", (C,), "bias"),
                (p + "attn.c_attn.weight", (C, 3 * C), "matrix"), (p + "attn.c_attn.bias", (3 * C,), "bias"),
                (p + "attn.c_proj.weight", (C, C), "matrix"), (p + "attn.c_proj.bias", (C,), "bias"),
                (p + "ln_2.weight", (C,), "norm"), (p + "ln_2.bias", (C,), "bias"),
                (p + "mlp.c_fc.weight", (C, 4 * C), "matrix"), (p + "mlp.c_fc.bias", (4 * C,), "bias"),
                (p + "mlp.c_proj.weight", (4 * C, C), "matrix"), (p + "mlp.c_proj.bias", (C,), "bias")]
    out += [("ln_f.weight", (C,), "norm"), ("ln_f.bias", (C,), "bias")]
    return out


def draw(shape, kind):
    if kind == "norm":
        return 1.0 + 0.2 * (torch.rand(shape) - 0.5)
    scale = {"matrix": 0.15, "embedding": 0.5, "bias": 0.05}[kind]
    return scale * torch.randn(shape)


def raw_bytes(t):
    """Little-endian bytes of t (already in its file dtype)."""
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16: its bits as int16
        return t.contiguous().view(torch.int16).numpy().astype("<i2").tobytes()
    kind = {torch.float32: "<f4", torch.float16: "<f2"}[t.dtype]
    return t.contiguous().numpy().astype(kind).tobytes()


def write_safetensors(path, tensors, dtype_name):
    header, body, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, t in tensors:
        data = raw_bytes(t)
        header[name] = {"dtype": dtype_name, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        body.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for data in body:
            f.write(data)


def config_json(family, cfg):
    if family == "gpt2":
        return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": cfg["n_layer"],
                "n_head": cfg["n_head"], "n_embd": cfg["d_model"], "n_positions": cfg["max_seq_len"],
                "vocab_size": cfg["vocab_size"], "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5}
    s = cfg["rope_scaling"]
    scaling = None if not s else {"rope_type": "llama3", "factor": s["factor"], "low_freq_factor": s["low_freq_factor"],
                                  "high_freq_factor": s["high_freq_factor"],
                                  "original_max_position_embeddings": s["original_context"]}
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": cfg["n_layer"],
            "num_attention_heads": cfg["n_head"], "num_key_value_heads": cfg["n_kv_head"],
            "hidden_size": cfg["d_model"], "intermediate_size": cfg["ffn_dim"], "vocab_size": cfg["vocab_size"],
            "max_position_embeddings": cfg["max_seq_len"], "rms_norm_eps": cfg["norm_eps"],
            "rope_theta": cfg["rope_theta"], "rope_scaling": scaling, "hidden_act": "silu",
            "tie_word_embeddings": cfg["tie_embeddings"]}


def main():
    spec = read_spec(__doc__)
    family, cfg, dtype = spec["family"], spec["config"], DTYPES[spec["dtype"]]
    torch.manual_seed(spec["seed"])
    listing = llama_tensors(cfg) if family == "llama" else gpt2_tensors(cfg)
    stored = [(name, draw(shape, kind).to(dtype)) for name, shape, kind in listing]
    values = {name: t.double() for name, t in stored}  # what the folder holds, exactly
    inputs = torch.tensor(spec["tokens"], dtype=torch.int64)[None, :]
    if family == "llama":
        cfg = dict(cfg, qk_norm=False)
        logits = llama_logits(cfg, inv_freq(cfg), values, inputs)
        files = stored
    else:
        # gpt2_logits computes with nn.Linear's (out, in) weights: Conv1D's transposed.
        p = {name: t.t() if name.endswith(CONV1D) else t for name, t in values.items()}
        logits = gpt2_logits(cfg, p, inputs)
        P = cfg["max_seq_len"]
        mask = torch.ones(P, P).tril().view(1, 1, P, P).to(dtype)
        files = [(spec["prefix"] + name, t) for name, t in stored]
        files += [(f"{spec['prefix']}h.{l}.attn.bias", mask) for l in range(cfg["n_layer"])]
        if spec.get("lm_head"):
            files.append(("lm_head.weight", dict(stored)["wte.weight"]))
    write_safetensors(spec["dir"] + "/model.safetensors", files, spec["dtype"])
    with open(spec["dir"] + "/config.json", "w") as f:
        json.dump(config_json(family, cfg), f, indent=2)
    logits[0].float().numpy().astype("<f4").tofile(spec["out_logits"])


if __name__ == "__main__":
    main()
