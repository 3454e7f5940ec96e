// Exporting a checkpoint's fp32 master weights for other programs:
// - llm.c model file, version 3 (fp32, padded vocabulary), through write_llmc_model;
// - safetensors with HF GPT-2 names and shapes, as transformers' GPT2LMHeadModel loads them
//   (keys without the "transformer." prefix, which from_pretrained adds for the base model):
//   wte.weight keeps only the vocab_size real rows (the padding rows are dropped); the four
//   Conv1D weights (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj) are stored (in, out), the
//   transpose of our nn.Linear (out, in); everything else as it is. All tensors F32. The
//   file is the HF folder's model.safetensors (hf_tensors, write_safetensors_file).
// - a Hugging Face model folder (hf): app/checkpoint/checkpoint_export_hf.h.
// All stream one tensor at a time (the model is never held twice) and write to a temporary
// file renamed into place, so the output path never holds a partial file.
#pragma once

#include <cstdint>
#include <string>

#include "app/checkpoint/checkpoint_reader.h"
#include "app/checkpoint/checkpoint_export_hf.h"
#include "kernels/base/enum_names.h"

namespace trainer {

enum class ExportFormat : uint8_t { llmc, safetensors, hf };
// `ckpt export --format` names.
inline constexpr EnumName<ExportFormat> kExportFormatNames[] = {{ExportFormat::llmc, "llmc"},
                                                                {ExportFormat::safetensors, "safetensors"},
                                                                {ExportFormat::hf, "hf"}};

// Export the checkpoint that `reader` opened; problems reading it (bad checksum, missing
// piece) and writing `path` are InputErrors, and `path` is then left as it was.
// hf writes a folder at `path` (app/checkpoint/checkpoint_export_hf.h), sharded past max_shard_bytes.
// Returns a note for the user (hf: which tokenizer files were written), else "". `existing`
// matters to hf only: a one-file export replaces its file whole, atomically, either way.
std::string export_checkpoint(CheckpointReader& reader, ExportFormat format, const std::string& path,
                              int64_t max_shard_bytes = kDefaultMaxShardBytes,
                              ExportExisting existing = ExportExisting::refuse);

}  // namespace trainer
