#!/usr/bin/env python3
"""Writes the generated seed inputs of the fuzz harnesses into OUT_DIR/<harness>/ (run by
scripts/fuzz.sh; small valid inputs, and the shapes each harness expects: see the header of
fuzz/fuzz_<harness>.cpp). Binary seeds are made here rather than committed.
usage: fuzz/seeds.py OUT_DIR"""
import json
import os
import struct
import sys


def gpt2_alphabet():
    """GPT-2's bytes_to_unicode (data/gpt2_vocab.cpp): byte -> the character standing for it."""
    printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE]
    out, shifted = {}, 256
    for b in range(256):
        if b in printable:
            out[b] = chr(b)
        else:
            out[b] = chr(shifted)
            shifted += 1
    return out


def shard(magic, version, tokens, fmt):
    header = struct.pack("<3i", magic, version, len(tokens)) + bytes(4 * 253)
    return header + struct.pack("<%d%s" % (len(tokens), fmt), *tokens)


def llmc(max_seq_len, vocab, n_layer, n_head, d_model, padded, size=None):
    c = d_model
    params = (padded + max_seq_len) * c + n_layer * (12 * c * c + 13 * c) + 2 * c
    header = struct.pack("<8i", 20240326, 3, max_seq_len, vocab, n_layer, n_head, d_model, padded)
    header += bytes(4 * 248)
    return header + struct.pack("<q", 1024 + 4 * params if size is None else size)


def tiny_vocab():
    alpha = gpt2_alphabet()
    tokens = [alpha[b] for b in range(256)]
    tokens += [alpha[32] + "t", "he", alpha[32] + "the", "<|endoftext|>"]
    encoder = json.dumps({t: i for i, t in enumerate(tokens)}, ensure_ascii=False)
    merges = "#version: 0.2\n%s t\nh e\n%st he\n" % (alpha[32], alpha[32])
    return encoder.encode(), merges.encode()


def hf_tokenizers():
    """Two small tokenizer.json files in the shapes of the real ones (data/hf_tokenizer_json.cpp):
    byte-level BPE with Llama 3's Split pattern, and SentencePiece-style BPE with byte fallback."""
    alpha = gpt2_alphabet()
    tokens = [alpha[b] for b in range(256)] + [alpha[32] + "t", "he", alpha[32] + "the"]
    llama3 = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 259, "content": "<|begin_of_text|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
                                                   "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
                                                   "\\s+(?!\\S)|\\s+"},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": True, "vocab": {t: i for i, t in enumerate(tokens)},
                  "merges": [[alpha[32], "t"], ["h", "e"], [alpha[32] + "t", "he"]]},
    }
    sp_tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + ["▁", "a", "b", "▁a", "ab"]
    llama2 = {
        "version": "1.0",
        "added_tokens": [{"id": i, "content": t, "special": True, "normalized": False}
                         for i, t in enumerate(sp_tokens[:3])],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                                           {"type": "Replace", "pattern": {"String": " "},
                                                            "content": "▁"}]},
        "pre_tokenizer": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}, {"type": "ByteFallback"},
            {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True,
                  "vocab": {t: i for i, t in enumerate(sp_tokens)}, "merges": ["▁ a", "a b"]},
    }
    dump = lambda d: json.dumps(d, ensure_ascii=False, indent=1).encode()
    return {"llama3.json": dump(llama3), "llama2.json": dump(llama2),
            "llama2_text.json": dump(llama2) + b"\0a b ab \xff\xfe<s> \xe2\x96\x81"}


def safetensors(tensors, metadata=None):
    """A safetensors file of F32/F16/BF16 tensors laid end to end, as save_file writes it."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    sizes = {"F32": 4, "F16": 2, "BF16": 2}
    for name, dtype, shape in tensors:
        n = sizes[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + n]}
        data += bytes((i * 7 + 3) % 251 for i in range(n))
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def hf_configs():
    """config.json of both families as `ckpt export --format hf` and transformers write them."""
    llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2, "hidden_size": 32, "head_dim": 8,
             "intermediate_size": 48, "max_position_embeddings": 64, "hidden_act": "silu",
             "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": True,
             "attention_bias": False, "mlp_bias": False, "vocab_size": 300, "torch_dtype": "bfloat16",
             "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                              "high_freq_factor": 4.0, "original_max_position_embeddings": 16}}
    gpt2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": 2, "n_head": 2,
            "n_embd": 16, "n_positions": 24, "n_ctx": 24, "n_inner": None, "activation_function": "gelu_new",
            "layer_norm_epsilon": 1e-05, "vocab_size": 300}
    dump = lambda d: json.dumps(d, indent=2).encode()
    return {"llama.json": dump(llama), "gpt2.json": dump(gpt2)}


def hf_indexes():
    weight_map = {"model.embed_tokens.weight": "model-00001-of-00002.safetensors",
                  "model.layers.0.self_attn.q_proj.weight": "model-00001-of-00002.safetensors",
                  "lm_head.weight": "model-00002-of-00002.safetensors"}
    return {"index.json": json.dumps({"metadata": {"total_size": 123456}, "weight_map": weight_map}, indent=2).encode(),
            "bare.json": json.dumps({"weight_map": {"w": "a.safetensors"}}).encode()}


def main():
    out = sys.argv[1]
    encoder, merges = tiny_vocab()
    seeds = {
        "shard_header": {
            "u16.bin": shard(20240520, 1, [0, 1, 50256, 1000, 7, 65, 66, 67], "H"),
            "u32.bin": shard(20240801, 7, [0, 50256, 3, 4], "I"),
            "empty.bin": shard(20240520, 1, [], "H"),
        },
        "llmc_header": {
            # configs/debug/tiny.yaml: 2 layers, 2 heads, d_model 32, 257 ids padded to 320
            "tiny.bin": llmc(16, 257, 2, 2, 32, 320),
            "gpt2_124m.bin": llmc(1024, 50257, 12, 12, 768, 50304),
            "short_size.bin": llmc(16, 257, 2, 2, 32, 320, 1024),
            # a million 1-wide layers, size matching: refused by the layer limit (was a hang)
            "many_layers.bin": llmc(1, 1, 1000000, 1, 1, 1),
        },
        "gpt2_vocab": {
            "tiny.txt": encoder + b"\0" + merges,
            "crlf.txt": encoder + b"\0" + merges.replace(b"\n", b"\r\n"),
        },
        "json_int_map": {
            "tiny.json": encoder,
            "escapes.json": b'{"a\\u00e9\\ud83d\\ude00": 1, "\\"\\\\\\/\\b\\f\\n\\r\\t": -2,\n "": 0}',
            "numbers.json": b'{"x": 9223372036854775807, "y": -9223372036854775808, "z": 0}',
        },
        "hf_tokenizer": hf_tokenizers(),
        "safetensors_header": {
            "f32.safetensors": safetensors([("wte.weight", "F32", [4, 3]), ("ln_f.bias", "F32", [3])],
                                           {"format": "pt"}),
            "mixed.safetensors": safetensors([("a", "BF16", [2, 2]), ("b", "F16", [3]), ("c", "F32", [])]),
            "empty.safetensors": safetensors([("z", "F32", [0, 5])]),
        },
        "hf_config": hf_configs(),
        "hf_index": hf_indexes(),
        "set_value": {
            "steps.txt": b"train.steps=100",
            "layout.txt": b"parallel.data=2\nparallel.tensor=2\nparallel.pipeline=2\nparallel.zero=1",
            "lists.txt": b"train.optimizer.betas=[0.9, 0.95]\nparallel.stages=[1, 1]",
            "maps.txt": b"train.lr_schedule={kind: cosine, warmup_steps: 2, min_lr_ratio: 0.1}",
            "strings.txt": b"data.train=x_*.bin\nlog.sample_prompt='hi'\ncheckpoint.dir=runs/c",
            "section.txt": b"model={n_layer: 4, n_head: 4, d_model: 64}\ntrain.precision=bf16",
        },
    }
    for harness, files in seeds.items():
        d = os.path.join(out, harness)
        os.makedirs(d, exist_ok=True)
        for name, data in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main()
