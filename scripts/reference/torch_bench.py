#!/usr/bin/python3
"""Tokens/s of the PyTorch references (gpt2_torch.py's and llama_torch.py's models) on the CPU,
for comparing with `trainer bench` run the same way: fp32, random weights of a recipe's shape,
AdamW steps of one micro-batch (forward, backward, clip, update) after warm-up steps.

usage: OPENBLAS_NUM_THREADS=N /usr/bin/python3 torch_bench.py RESOLVED.yaml --threads N
         [--batch 4 --seq 64 --steps 5 --warmup 2]
RESOLVED.yaml is `trainer validate RECIPE`'s output (its model block gives the shape; arch gpt2
or llama). Prints one JSON line: threads, step_s, tokens_per_s.
"""
import argparse
import json
import time

import torch
import yaml

from gpt2_torch import file_order, gpt2_loss
from llama_torch import inv_freq, llama_loss


def padded_vocab(m):
    """The embedding's rows: model.vocab_size rounded up to model.vocab_multiple."""
    return (m["vocab_size"] + m["vocab_multiple"] - 1) // m["vocab_multiple"] * m["vocab_multiple"]


def gpt2_setup(m):
    cfg = dict(max_seq_len=m["seq_len"], vocab_size=m["vocab_size"], n_layer=m["n_layer"],
               n_head=m["n_head"], d_model=m["d_model"], padded_vocab=padded_vocab(m))
    shapes = dict(file_order(cfg))
    return shapes, lambda p, x, y: gpt2_loss(cfg, p, x, y)


def llama_setup(m):
    # float(): PyYAML reads "1e-05" (no decimal point) as a string.
    scaling = {k: float(v) for k, v in m["rope_scaling"].items()}
    cfg = dict(n_layer=m["n_layer"], n_head=m["n_head"], n_kv_head=m["n_kv_head"], d_model=m["d_model"],
               ffn_dim=m["ffn_dim"], vocab_size=m["vocab_size"], norm_eps=float(m["norm_eps"]),
               rope_theta=float(m["rope_theta"]), rope_scaling=scaling if scaling["factor"] > 0 else None,
               tie_embeddings=m["tie_embeddings"], qk_norm=m["qk_norm"])
    C, V, F = m["d_model"], m["vocab_size"], m["ffn_dim"]
    kv = m["n_kv_head"] * (C // m["n_head"])
    shapes = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    if not m["tie_embeddings"]:
        shapes["lm_head.weight"] = (V, C)
    for l in range(m["n_layer"]):
        h = f"model.layers.{l}."
        shapes.update({h + "input_layernorm.weight": (C,), h + "self_attn.q_proj.weight": (C, C),
                       h + "self_attn.k_proj.weight": (kv, C), h + "self_attn.v_proj.weight": (kv, C),
                       h + "self_attn.o_proj.weight": (C, C), h + "post_attention_layernorm.weight": (C,),
                       h + "mlp.gate_proj.weight": (F, C), h + "mlp.up_proj.weight": (F, C),
                       h + "mlp.down_proj.weight": (C, F)})
        if m["qk_norm"]:
            D = C // m["n_head"]
            shapes.update({h + "self_attn.q_norm.weight": (D,), h + "self_attn.k_norm.weight": (D,)})
    freq = inv_freq(cfg)
    return shapes, lambda p, x, y: llama_loss(cfg, freq, p, x, y)


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("resolved")
    for name, default in [("threads", 1), ("batch", 4), ("seq", 64), ("steps", 5), ("warmup", 2)]:
        a.add_argument("--" + name, type=int, default=default)
    args = a.parse_args()
    with open(args.resolved) as f:
        m = yaml.safe_load(f)["model"]
    setups = {"gpt2": gpt2_setup, "llama": llama_setup}
    if m["arch"] not in setups:
        raise SystemExit(f"{args.resolved}: model.arch {m['arch']!r}: valid: {', '.join(setups)}")
    torch.set_flush_denormal(True)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    shapes, loss_fn = setups[m["arch"]](m)
    # Norm weights 1, biases 0, matrices N(0, 0.02): the trainer's initialisation, in distribution.
    params = {n: torch.nn.Parameter(torch.randn(s) * 0.02 if len(s) == 2 else
                                    (torch.ones(s) if "weight" in n else torch.zeros(s)))
              for n, s in shapes.items()}
    opt = torch.optim.AdamW(params.values(), lr=1e-4, foreach=False)
    tokens = torch.randint(0, m["vocab_size"], (args.batch, args.seq + 1))
    x, y = tokens[:, :-1], tokens[:, 1:]
    for i in range(args.warmup + args.steps):
        if i == args.warmup:
            start = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss_fn(params, x, y).backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()
    seconds = (time.perf_counter() - start) / args.steps
    print(json.dumps({"threads": args.threads, "step_s": seconds, "tokens_per_s": args.batch * args.seq / seconds}))


if __name__ == "__main__":
    main()
