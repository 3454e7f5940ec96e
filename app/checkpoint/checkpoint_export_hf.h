// `trainer ckpt export CKPT --format hf --out DIR`: a Hugging Face model folder from a
// checkpoint's fp32 master weights: config.json (hf_config_json), model.safetensors or, past
// max_shard_bytes, model-0000K-of-0000N.safetensors shards with model.safetensors.index.json,
// generation_config.json (bos/eos of the recipe's tokenizer) and the tokenizer files the
// recipe used (tokenizer.json + tokenizer_config.json for a tokenizer.json path; vocab.json +
// merges.txt for the built-in gpt2 one, which are encoder.json and vocab.bpe; none for byte).
// Tensors are F32 and streamed one at a time; every file is written atomically.
// The export owns that whole set of names in the folder (model-*-of-*.safetensors included):
// a folder that already holds any of them is refused unless ExportExisting::replace (--force),
// and then the set is replaced as one (folder_publication.h: files of the earlier export that
// this one does not write are removed, and until the end the folder is marked, so a loader
// never takes a half-written folder or a stale index beside new weights for an export).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/hf/hf_folder.h"

namespace trainer {

class CheckpointReader;

// What an export does to a folder that already holds an export's files (--force: replace).
enum class ExportExisting : uint8_t { refuse, replace };

constexpr int64_t kDefaultMaxShardBytes = int64_t(5) * 1000 * 1000 * 1000;  // transformers' "5GB"

// Returns a one-line note on the tokenizer files written (or why none were).
std::string export_hf_folder(CheckpointReader& reader, const std::string& dir, int64_t max_shard_bytes,
                             ExportExisting existing);

// The header JSON of a safetensors file holding `tensors` (F32, in this order, contiguous from
// offset 0), padded with spaces so that 8 + its size is a multiple of 8 (the 8-byte
// little-endian length that precedes it in the file is not included).
std::string safetensors_header(const std::vector<HfTensor>& tensors);
// That file, written atomically at `path`, from the checkpoint's master weights (to_hf_values);
// also `ckpt export --format safetensors` (every tensor of hf_tensors in one file).
void write_safetensors_file(CheckpointReader& reader, const std::vector<HfTensor>& tensors, const std::string& path);

}  // namespace trainer
