// Checkpoint export (see checkpoint_export.h).
#include "app/checkpoint/checkpoint_export.h"

#include "app/hf/hf_folder.h"
#include "kernels/base/errors.h"
#include "model/llmc_file.h"

namespace trainer {

std::string export_checkpoint(CheckpointReader& reader, ExportFormat format, const std::string& path,
                              int64_t max_shard_bytes, ExportExisting existing) {
  switch (format) {
    case ExportFormat::llmc:
      if (reader.manifest().model.family().llmc == LlmcFiles::unsupported)
        throw ConfigError("ckpt export --format llmc: " + reader.dir() + " holds a " +
                          model_arch_name(reader.manifest().model.arch) +
                          " model, and llm.c model files hold GPT-2 weights only; valid for it: --format safetensors");
      write_llmc_model(path, reader.manifest().model,
                       [&](const std::string& name) { return reader.read_full(name, OptimizerState::master); });
      return "";
    case ExportFormat::safetensors:
      write_safetensors_file(reader, hf_tensors(reader.manifest().model), path);
      return "";
    case ExportFormat::hf: return "tokenizer: " + export_hf_folder(reader, path, max_shard_bytes, existing);
  }
  return "";
}

}  // namespace trainer
