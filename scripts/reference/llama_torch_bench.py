#!/usr/bin/python3
"""Tokens/s of the PyTorch Llama reference (llama_torch.py's model) on the CPU, for comparing
with `trainer bench` run the same way: fp32, random weights of a recipe's shape, AdamW steps of
one micro-batch (forward, backward, clip, update), after warm-up steps.

usage: OPENBLAS_NUM_THREADS=N /usr/bin/python3 llama_torch_bench.py --threads N
         [--layers 30 --heads 9 --kv-heads 3 --d-model 576 --ffn 1536 --vocab 49152
          --theta 100000 --tied 1] [--batch 4 --seq 64 --steps 5 --warmup 2]
(the defaults are SmolLM2-135M's shape at micro-batch 4 x 64). Prints one JSON line.
"""
import argparse
import json
import time

import torch

from llama_torch import inv_freq, llama_loss


def main():
    a = argparse.ArgumentParser()
    for name, default in [("threads", 1), ("layers", 30), ("heads", 9), ("kv-heads", 3), ("d-model", 576),
                          ("ffn", 1536), ("vocab", 49152), ("tied", 1), ("batch", 4), ("seq", 64),
                          ("steps", 5), ("warmup", 2)]:
        a.add_argument("--" + name, type=int, default=default)
    a.add_argument("--theta", type=float, default=100000.0)
    args = a.parse_args()
    torch.set_flush_denormal(True)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    cfg = dict(n_layer=args.layers, n_head=args.heads, n_kv_head=args.kv_heads, d_model=args.d_model,
               ffn_dim=args.ffn, vocab_size=args.vocab, norm_eps=1e-5, rope_theta=args.theta, rope_scaling=None,
               tie_embeddings=bool(args.tied), qk_norm=False)
    C, D, F, V = args.d_model, args.d_model // args.heads, args.ffn, args.vocab
    shapes = {"model.embed_tokens.weight": (V, C), "model.norm.weight": (C,)}
    if not args.tied:
        shapes["lm_head.weight"] = (V, C)
    for l in range(args.layers):
        h = f"model.layers.{l}."
        shapes.update({h + "input_layernorm.weight": (C,), h + "self_attn.q_proj.weight": (C, C),
                       h + "self_attn.k_proj.weight": (args.kv_heads * D, C),
                       h + "self_attn.v_proj.weight": (args.kv_heads * D, C), h + "self_attn.o_proj.weight": (C, C),
                       h + "post_attention_layernorm.weight": (C,), h + "mlp.gate_proj.weight": (F, C),
                       h + "mlp.up_proj.weight": (F, C), h + "mlp.down_proj.weight": (C, F)})
    params = {n: torch.nn.Parameter(torch.ones(s) if len(s) == 1 else torch.randn(s) * 0.02)
              for n, s in shapes.items()}
    opt = torch.optim.AdamW(params.values(), lr=1e-4, foreach=False)
    freq = inv_freq(cfg)
    tokens = torch.randint(0, V, (args.batch, args.seq + 1))
    x, y = tokens[:, :-1], tokens[:, 1:]
    for i in range(args.warmup + args.steps):
        if i == args.warmup:
            start = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        llama_loss(cfg, freq, params, x, y).backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()
    seconds = (time.perf_counter() - start) / args.steps
    print(json.dumps({"threads": args.threads, "step_s": seconds, "tokens_per_s": args.batch * args.seq / seconds}))


if __name__ == "__main__":
    main()
