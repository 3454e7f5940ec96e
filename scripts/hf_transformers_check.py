#!/usr/bin/env python3
"""Compares an exported Hugging Face folder, loaded by transformers, with trainer's own logits
(scripts/gpu_check.sh's hf_logits step).

Usage: hf_transformers_check.py DIR LOGITS_JSON [--rtol R]
  DIR          written by `trainer ckpt export CKPT --format hf --out DIR`
  LOGITS_JSON  written by `trainer sample CKPT --temperature 0 --logits FILE`:
               {"prompt_ids": [...], "ids": [...], "logits": [row, ...]}, row k the logits at
               position len(prompt_ids) - 1 + k of ids
Loads AutoModelForCausalLM.from_pretrained(DIR) in float32 on the CPU, runs ids once, and
checks every row: max |trainer - transformers| / max |transformers| <= R (default 1e-4), and
that transformers' argmax at each position is the token trainer chose greedily. When DIR holds
tokenizer files, AutoTokenizer.from_pretrained(DIR) must also decode the prompt ids back to text
that it encodes to the same ids. Prints details, then one result line; exit 0 pass, 1 fail,
77 when transformers (or torch) is not importable.
"""
import argparse
import json
import os
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("logits_json")
    ap.add_argument("--rtol", type=float, default=1e-4)
    a = ap.parse_args()
    try:
        import torch
        import transformers
    except ImportError as e:
        print(f"SKIP: python3 cannot import transformers/torch ({e})")
        return 77
    with open(a.logits_json) as f:
        ref = json.load(f)
    # No dtype argument (transformers 5 renamed torch_dtype to dtype): load, then go to f32,
    # which is exact from either of the dtypes the trainer exports.
    model = transformers.AutoModelForCausalLM.from_pretrained(a.dir).float()
    model.eval()
    ids, prompt, rows = ref["ids"], ref["prompt_ids"], ref["logits"]
    with torch.no_grad():
        out = model(torch.tensor([ids], dtype=torch.int64)).logits[0].double()
    ours = torch.tensor(rows, dtype=torch.float64)
    theirs = out[len(prompt) - 1:len(prompt) - 1 + len(rows), :ours.shape[1]]
    if ours.shape != theirs.shape:
        print(f"FAIL: trainer's logits {tuple(ours.shape)} vs transformers' {tuple(theirs.shape)}")
        return 1
    rel = float((ours - theirs).abs().max() / theirs.abs().max().clamp_min(1e-30))
    chosen = ids[len(prompt):len(prompt) + len(rows)]
    argmax = theirs.argmax(dim=-1).tolist()
    id_diffs = sum(int(x != y) for x, y in zip(chosen, argmax))
    kind = type(model).__name__
    notes = [f"{kind}: {len(rows)} positions x {ours.shape[1]} logits, max rel diff {rel:.2e} (rtol {a.rtol:g})",
             f"greedy ids {len(chosen) - id_diffs}/{len(chosen)} equal"]
    ok = rel <= a.rtol and id_diffs == 0
    tokenizer_files = [f for f in ("tokenizer.json", "vocab.json") if os.path.exists(os.path.join(a.dir, f))]
    if tokenizer_files:
        tok = transformers.AutoTokenizer.from_pretrained(a.dir)
        again = tok.encode(tok.decode(prompt), add_special_tokens=False)
        same = again == prompt
        notes.append(f"tokenizer ({tokenizer_files[0]}) ids {'equal' if same else 'DIFFER'}")
        ok = ok and same
    else:
        notes.append("no tokenizer files (byte tokenizer)")
    print(("" if ok else "FAIL: ") + "; ".join(notes))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
