#!/usr/bin/python3
"""Independent GPT-2 reference in PyTorch, for parity tests of the trainer.

Reads a JSON spec, trains `steps` AdamW steps on given token batches starting from an llm.c
model file, and writes the losses (JSON) and the final weights (llm.c model file). Written
from the GPT-2 / llm.c definition, not from the trainer's C++ code:
  - pre-LayerNorm blocks (eps 1e-5), causal self-attention scaled by 1/sqrt(head_dim),
    tanh-approximated GELU, learned position embeddings, biases everywhere;
  - token embedding tied to the output head; the padded vocabulary rows are part of the
    embedding table but kept out of the loss (logits[..., :vocab_size]);
  - loss = mean cross-entropy over all tokens of a step: each of grad_accum micro-batches
    contributes its mean loss / grad_accum;
  - torch.nn.utils.clip_grad_norm_ over all parameters, then torch.optim.AdamW with weight
    decay on the 2-D parameters only; the learning rate of each step follows llm.c's warm-up
    (lr * (s + 1) / warmup) and then the chosen decay.

Spec (JSON):
  model         llm.c model file (magic 20240326, version 3) with the initial weights
  batches       raw little-endian int32, shape (steps, grad_accum, 2, micro_batch, seq_len):
                for every micro-batch its inputs, then its targets
  steps, grad_accum, micro_batch, seq_len
  optimizer     {lr, beta1, beta2, eps, weight_decay, grad_clip (0 = none)}
  lr_schedule   {kind: constant|linear|cosine|wsd, warmup_steps, total_steps, min_lr_ratio,
                 decay_fraction}
  out_losses    JSON written: {"losses": [...], "grad_norms": [...], "lrs": [...]}
  out_model     llm.c model file written with the final weights

Run with Debian's interpreter: OPENBLAS_NUM_THREADS=1 /usr/bin/python3 gpt2_torch.py SPEC
"""
import json
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F

MAGIC = 20240326
VERSION_F32 = 3
HEADER_INTS = 256

# llm.c's tensor order; per-layer kinds are stacked over layers in the file.
KINDS = [("wte.weight", False), ("wpe.weight", False),
         ("ln_1.weight", True), ("ln_1.bias", True),
         ("attn.c_attn.weight", True), ("attn.c_attn.bias", True),
         ("attn.c_proj.weight", True), ("attn.c_proj.bias", True),
         ("ln_2.weight", True), ("ln_2.bias", True),
         ("mlp.c_fc.weight", True), ("mlp.c_fc.bias", True),
         ("mlp.c_proj.weight", True), ("mlp.c_proj.bias", True),
         ("ln_f.weight", False), ("ln_f.bias", False)]


def kind_shape(cfg, kind):
    C = cfg["d_model"]
    return {"wte.weight": (cfg["padded_vocab"], C), "wpe.weight": (cfg["max_seq_len"], C),
            "attn.c_attn.weight": (3 * C, C), "attn.c_attn.bias": (3 * C,),
            "attn.c_proj.weight": (C, C), "mlp.c_fc.weight": (4 * C, C),
            "mlp.c_fc.bias": (4 * C,), "mlp.c_proj.weight": (C, 4 * C)}.get(kind, (C,))


def file_order(cfg):
    """(name, shape) of every tensor in the order the file stores them."""
    for kind, per_layer in KINDS:
        names = [f"h.{l}.{kind}" for l in range(cfg["n_layer"])] if per_layer else [kind]
        for name in names:
            yield name, kind_shape(cfg, kind)


def read_llmc(path):
    with open(path, "rb") as f:
        header = np.frombuffer(f.read(HEADER_INTS * 4), dtype="<i4")
        body = np.frombuffer(f.read(), dtype="<f4")
    if header.size != HEADER_INTS or header[0] != MAGIC:
        sys.exit(f"{path}: not an llm.c model file (magic {MAGIC} expected)")
    if header[1] != VERSION_F32:
        sys.exit(f"{path}: version {header[1]} is not supported; valid: {VERSION_F32} (fp32)")
    cfg = dict(max_seq_len=int(header[2]), vocab_size=int(header[3]), n_layer=int(header[4]),
               n_head=int(header[5]), d_model=int(header[6]), padded_vocab=int(header[7]))
    tensors, at = {}, 0
    for name, shape in file_order(cfg):
        n = int(np.prod(shape))
        if at + n > body.size:
            sys.exit(f"{path}: truncated at {name}")
        tensors[name] = torch.tensor(body[at:at + n].reshape(shape).copy())
        at += n
    if at != body.size:
        sys.exit(f"{path}: {body.size - at} floats after the last tensor")
    return cfg, tensors


def write_llmc(path, cfg, tensors):
    header = np.zeros(HEADER_INTS, dtype="<i4")
    header[:8] = [MAGIC, VERSION_F32, cfg["max_seq_len"], cfg["vocab_size"], cfg["n_layer"],
                  cfg["n_head"], cfg["d_model"], cfg["padded_vocab"]]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for name, shape in file_order(cfg):
            t = tensors[name].detach()
            assert tuple(t.shape) == shape, name
            f.write(t.numpy().astype("<f4").tobytes())


def gpt2_logits(cfg, p, inputs):
    """GPT-2's logits (B, T, vocab_size) on inputs (B, T) int64."""
    B, T = inputs.shape
    C, nh, V = cfg["d_model"], cfg["n_head"], cfg["vocab_size"]
    hd = C // nh
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    x = p["wte.weight"][inputs] + p["wpe.weight"][:T]  # (B, T, C)
    for l in range(cfg["n_layer"]):
        w = lambda kind: p[f"h.{l}.{kind}"]  # noqa: E731
        h = F.layer_norm(x, (C,), w("ln_1.weight"), w("ln_1.bias"), eps=1e-5)
        qkv = F.linear(h, w("attn.c_attn.weight"), w("attn.c_attn.bias"))  # (B, T, 3C)
        q, k, v = (t.view(B, T, nh, hd).transpose(1, 2) for t in qkv.split(C, dim=2))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))  # (B, nh, T, T)
        att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, w("attn.c_proj.weight"), w("attn.c_proj.bias"))
        h = F.layer_norm(x, (C,), w("ln_2.weight"), w("ln_2.bias"), eps=1e-5)
        h = F.gelu(F.linear(h, w("mlp.c_fc.weight"), w("mlp.c_fc.bias")), approximate="tanh")
        x = x + F.linear(h, w("mlp.c_proj.weight"), w("mlp.c_proj.bias"))
    x = F.layer_norm(x, (C,), p["ln_f.weight"], p["ln_f.bias"], eps=1e-5)
    return (x @ p["wte.weight"].t())[..., :V]  # padded rows never enter the loss


def gpt2_loss(cfg, p, inputs, targets):
    """Mean cross-entropy of GPT-2 on inputs/targets, both (B, T) int64."""
    V = cfg["vocab_size"]
    return F.cross_entropy(gpt2_logits(cfg, p, inputs).reshape(-1, V), targets.reshape(-1))


def lr_at(s, max_lr, step):
    """llm.c-style schedule: linear warm-up, then constant, linear, cosine or wsd decay."""
    warmup, total = s["warmup_steps"], s["total_steps"]
    min_lr = max_lr * s["min_lr_ratio"]
    if step < warmup:
        return max_lr * (step + 1) / warmup
    progress = min(max((step - warmup) / max(1, total - warmup), 0.0), 1.0)
    kind = s["kind"]
    if kind == "constant":
        return max_lr
    if kind == "linear":
        return max_lr + (min_lr - max_lr) * progress
    if kind == "cosine":
        return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (max_lr - min_lr)
    if kind == "wsd":
        start = 1.0 - s["decay_fraction"]
        if progress <= start:
            return max_lr
        return max_lr + (min_lr - max_lr) * (progress - start) / s["decay_fraction"]
    sys.exit(f"unknown lr_schedule.kind {kind!r}; valid: constant, linear, cosine, wsd")


def read_batches(spec):
    """The spec's token batches as int64 (steps, grad_accum, 2, micro_batch, seq_len)."""
    steps, accum = spec["steps"], spec["grad_accum"]
    B, T = spec["micro_batch"], spec["seq_len"]
    tokens = np.fromfile(spec["batches"], dtype="<i4")
    if tokens.size != steps * accum * 2 * B * T:
        sys.exit(f"{spec['batches']}: {tokens.size} tokens, expected {steps * accum * 2 * B * T}")
    return torch.tensor(tokens.astype(np.int64)).view(steps, accum, 2, B, T)


def train(spec, params, loss_fn):
    """`steps` AdamW steps of loss_fn(params, inputs, targets) over the spec's batches, with
    accumulation, clipping and the schedule; returns (losses, grad_norms, lrs)."""
    steps, accum = spec["steps"], spec["grad_accum"]
    batches = read_batches(spec)
    opt_cfg = spec["optimizer"]
    groups = [{"params": [t for t in params.values() if t.dim() == 2],
               "weight_decay": opt_cfg["weight_decay"]},
              {"params": [t for t in params.values() if t.dim() != 2], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=opt_cfg["lr"], betas=(opt_cfg["beta1"], opt_cfg["beta2"]),
                            eps=opt_cfg["eps"], foreach=False)

    losses, norms, lrs = [], [], []
    for step in range(steps):
        opt.zero_grad(set_to_none=False)
        step_loss = 0.0
        for m in range(accum):
            loss = loss_fn(params, batches[step, m, 0], batches[step, m, 1]) / accum
            loss.backward()
            step_loss += loss.item()
        if opt_cfg["grad_clip"] > 0:
            norm = torch.nn.utils.clip_grad_norm_(list(params.values()), opt_cfg["grad_clip"])
        else:
            norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params.values()]))
        lr = lr_at(spec["lr_schedule"], opt_cfg["lr"], step)
        for g in opt.param_groups:
            g["lr"] = lr
        opt.step()
        losses.append(step_loss)
        norms.append(float(norm))
        lrs.append(lr)
    return losses, norms, lrs


def write_losses(spec, losses, norms, lrs):
    with open(spec["out_losses"], "w") as f:
        json.dump({"losses": losses, "grad_norms": norms, "lrs": lrs}, f)


def read_spec(usage):
    """The JSON spec named on the command line (else exit with `usage`), with torch set up as
    every reference runs: denormals flushed, one thread."""
    if len(sys.argv) != 2:
        sys.exit(usage)
    torch.set_flush_denormal(True)
    torch.set_num_threads(1)
    with open(sys.argv[1]) as f:
        return json.load(f)


def main():
    spec = read_spec(__doc__)
    cfg, init = read_llmc(spec["model"])
    params = {name: torch.nn.Parameter(t) for name, t in init.items()}
    losses, norms, lrs = train(spec, params, lambda p, x, y: gpt2_loss(cfg, p, x, y))
    write_losses(spec, losses, norms, lrs)
    write_llmc(spec["out_model"], cfg, params)


if __name__ == "__main__":
    main()
