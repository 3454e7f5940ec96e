// Exporting a checkpoint's fp32 master weights for other programs:
// - llm.c model file, version 3 (fp32, padded vocabulary), through write_llmc_model;
// - safetensors with HF GPT-2 names and shapes, as transformers' GPT2LMHeadModel loads them
//   (keys without the "transformer." prefix, which from_pretrained adds for the base model):
//   wte.weight keeps only the vocab_size real rows (the padding rows are dropped); the four
//   Conv1D weights (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) are stored (in, out), the
//   transpose of our nn.Linear (out, in); everything else as it is. All tensors F32.
// - a Hugging Face model folder (hf): app/hf/hf_export.h.
// All stream one tensor at a time (the model is never held twice) and write to a temporary
// file renamed into place, so the output path never holds a partial file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/checkpoint/checkpoint_reader.h"
#include "app/hf/hf_export.h"
#include "kernels/base/enum_names.h"

namespace trainer {

enum class ExportFormat : uint8_t { llmc, safetensors, hf };
// `ckpt export --format` names.
inline constexpr EnumName<ExportFormat> kExportFormatNames[] = {{ExportFormat::llmc, "llmc"},
                                                                {ExportFormat::safetensors, "safetensors"},
                                                                {ExportFormat::hf, "hf"}};

// How a stored global tensor becomes a safetensors tensor.
enum class SafetensorsTransform : uint8_t {
  copy,           // as stored
  transpose,      // (out, in) -> (in, out): HF Conv1D weights
  drop_pad_rows,  // first `shape[0]` rows only: the embedding without vocabulary padding
};

struct SafetensorsEntry {
  std::string key;             // HF GPT-2 name; also our global name
  std::vector<int64_t> shape;  // as stored in the file
  SafetensorsTransform transform = SafetensorsTransform::copy;
  int64_t begin = 0, end = 0;  // data_offsets: bytes into the data section
};

// Every tensor of the exported file, in file order, with contiguous offsets from 0.
std::vector<SafetensorsEntry> safetensors_entries(const GptConfig& config);
// The header JSON for these entries, padded with spaces so that 8 + its size is a multiple of
// 8 (the 8-byte little-endian length that precedes it in the file is not included).
std::string safetensors_header(const std::vector<SafetensorsEntry>& entries);

// Export the checkpoint that `reader` opened; problems reading it (bad checksum, missing
// piece) and writing `path` are InputErrors, and `path` is then left as it was.
// hf writes a folder at `path` (app/hf/hf_export.h), sharded past max_shard_bytes.
// Returns a note for the user (hf: which tokenizer files were written), else "".
std::string export_checkpoint(CheckpointReader& reader, ExportFormat format, const std::string& path,
                       int64_t max_shard_bytes = kDefaultMaxShardBytes);

}  // namespace trainer
