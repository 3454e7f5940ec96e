#!/usr/bin/python3
"""Independent Llama reference in PyTorch, for parity tests of the trainer.

Reads a JSON spec, trains `steps` AdamW steps on given token batches from given weights, and
writes the losses (JSON) and the final weights. Written from the Llama definition as Hugging
Face's LlamaForCausalLM implements it (and Qwen3's q_norm/k_norm), not from the trainer's
C++ code:
  - pre-RMSNorm blocks: x * rsqrt(mean(x^2) + eps) * weight, no biases anywhere;
  - rotary embeddings in the rotate-half layout, inv_freq = 1 / theta^(2i/D) with Llama 3.1's
    frequency scaling when rope_scaling is given; cos/sin of position * inv_freq;
  - grouped-query attention: k/v heads repeated n_head / n_kv_head times (repeat_kv), causal,
    scaled by 1/sqrt(head_dim); with qk_norm, RMSNorm over head_dim of every q and k head
    before rope;
  - SwiGLU MLP: down(silu(gate(x)) * up(x));
  - final RMSNorm, head = lm_head.weight, or the token table when tied; the padded vocabulary
    rows are kept out of the loss; the training loop (loss averaging over accumulation,
    clipping, AdamW with decay on 2-D tensors, schedule) is gpt2_torch.py's.

Spec (JSON): gpt2_torch.py's keys, with "model" replaced by
  config        {n_layer, n_head, n_kv_head, d_model, ffn_dim, vocab_size, padded_vocab,
                 norm_eps, rope_theta, rope_scaling (null or {factor, low_freq_factor,
                 high_freq_factor, original_context}), tie_embeddings, qk_norm}
  weights       raw little-endian float32 tensors, concatenated in the order of
  weight_names  [[name, [shape...]], ...] (Hugging Face names)
  out_weights   written like `weights`, same order, with the final values

Run with Debian's interpreter: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 llama_torch.py SPEC
"""
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

from gpt2_torch import read_spec, train, write_losses


def read_weights(path, names):
    body = np.fromfile(path, dtype="<f4")
    tensors, at = {}, 0
    for name, shape in names:
        n = int(np.prod(shape))
        if at + n > body.size:
            sys.exit(f"{path}: truncated at {name}")
        tensors[name] = torch.tensor(body[at:at + n].reshape(shape).copy())
        at += n
    if at != body.size:
        sys.exit(f"{path}: {body.size - at} floats after the last tensor")
    return tensors


def write_weights(path, names, tensors):
    with open(path, "wb") as f:
        for name, shape in names:
            t = tensors[name].detach()
            assert list(t.shape) == list(shape), name
            f.write(t.numpy().astype("<f4").tobytes())


def inv_freq(cfg):
    D = cfg["d_model"] // cfg["n_head"]
    freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
    s = cfg.get("rope_scaling")
    if not s:
        return freq
    factor, low, high, old = s["factor"], s["low_freq_factor"], s["high_freq_factor"], s["original_context"]
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * math.pi / freq
    scaled = torch.where(wavelen > low_wavelen, freq / factor, freq)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, scaled)


def rms_norm(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def llama_logits(cfg, freq, p, inputs):
    """The Llama model's logits (B, T, vocab_size) on inputs (B, T) int64."""
    B, T = inputs.shape
    C, H, V, eps = cfg["d_model"], cfg["n_head"], cfg["vocab_size"], cfg["norm_eps"]
    Hkv = cfg["n_kv_head"]
    D = C // H
    angles = torch.arange(T, dtype=torch.float32)[:, None] * freq[None, :]  # (T, D/2)
    emb = torch.cat((angles, angles), dim=-1)
    cos, sin = emb.cos(), emb.sin()  # (T, D)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    x = p["model.embed_tokens.weight"][inputs]
    for l in range(cfg["n_layer"]):
        w = lambda kind: p[f"model.layers.{l}.{kind}"]  # noqa: E731
        h = rms_norm(x, w("input_layernorm.weight"), eps)
        q = F.linear(h, w("self_attn.q_proj.weight")).view(B, T, H, D)
        k = F.linear(h, w("self_attn.k_proj.weight")).view(B, T, Hkv, D)
        v = F.linear(h, w("self_attn.v_proj.weight")).view(B, T, Hkv, D)
        if cfg["qk_norm"]:
            q = rms_norm(q, w("self_attn.q_norm.weight"), eps)
            k = rms_norm(k, w("self_attn.k_norm.weight"), eps)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # (B, heads, T, D)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(H // Hkv, dim=1)
        v = v.repeat_interleave(H // Hkv, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D))
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, w("self_attn.o_proj.weight"))
        h = rms_norm(x, w("post_attention_layernorm.weight"), eps)
        h = F.silu(F.linear(h, w("mlp.gate_proj.weight"))) * F.linear(h, w("mlp.up_proj.weight"))
        x = x + F.linear(h, w("mlp.down_proj.weight"))
    x = rms_norm(x, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if cfg["tie_embeddings"] else p["lm_head.weight"]
    return (x @ head.t())[..., :V]


def llama_loss(cfg, freq, p, inputs, targets):
    """Mean cross-entropy of the Llama model on inputs/targets, both (B, T) int64."""
    V = cfg["vocab_size"]
    return F.cross_entropy(llama_logits(cfg, freq, p, inputs).reshape(-1, V), targets.reshape(-1))


def main():
    spec = read_spec(__doc__)
    cfg = spec["config"]
    names = spec["weight_names"]
    params = {name: torch.nn.Parameter(t) for name, t in read_weights(spec["weights"], names).items()}
    freq = inv_freq(cfg)
    losses, norms, lrs = train(spec, params, lambda p, x, y: llama_loss(cfg, freq, p, x, y))
    write_losses(spec, losses, norms, lrs)
    write_weights(spec["out_weights"], names, params)


if __name__ == "__main__":
    main()
