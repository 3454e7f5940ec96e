// `trainer ckpt export CKPT --format hf --out DIR`: a Hugging Face model folder from a
// checkpoint's fp32 master weights: config.json (hf_config_json), model.safetensors or, past
// max_shard_bytes, model-0000K-of-0000N.safetensors shards with model.safetensors.index.json,
// generation_config.json (bos/eos of the recipe's tokenizer) and the tokenizer files the
// recipe used (tokenizer.json + tokenizer_config.json for a tokenizer.json path; vocab.json +
// merges.txt for the built-in gpt2 one, which are encoder.json and vocab.bpe; none for byte).
// Tensors are F32 and streamed one at a time; every file is written atomically.
#pragma once

#include <cstdint>
#include <string>

namespace trainer {

class CheckpointReader;

constexpr int64_t kDefaultMaxShardBytes = int64_t(5) * 1000 * 1000 * 1000;  // transformers' "5GB"

// Returns a one-line note on the tokenizer files written (or why none were).
std::string export_hf_folder(CheckpointReader& reader, const std::string& dir, int64_t max_shard_bytes);

}  // namespace trainer
