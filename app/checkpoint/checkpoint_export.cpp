// Checkpoint export (see checkpoint_export.h).
#include "app/checkpoint/checkpoint_export.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "app/hf/hf_folder.h"
#include "kernels/base/atomic_file.h"
#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "model/llmc_file.h"

namespace trainer {

namespace {

// The exported tensor from the stored global one (shape `stored`).
std::vector<float> transform_tensor(const SafetensorsEntry& e, const std::vector<int64_t>& stored,
                                    std::vector<float> values) {
  switch (e.transform) {
    case SafetensorsTransform::copy: return values;
    case SafetensorsTransform::drop_pad_rows:
      values.resize(size_t(e.shape[0] * e.shape[1]));
      return values;
    case SafetensorsTransform::transpose: {
      const int64_t rows = stored[0], cols = stored[1];  // (out, in)
      std::vector<float> out(values.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) out[size_t(c * rows + r)] = values[size_t(r * cols + c)];
      return out;
    }
  }
  return values;
}

void export_safetensors(CheckpointReader& reader, const std::string& path) {
  const std::vector<SafetensorsEntry> entries = safetensors_entries(reader.manifest().model);
  const std::string header = safetensors_header(entries);
  write_file_atomically(path, "safetensors file", [&](const AtomicWriteFn& write) {
    unsigned char length[8];
    const uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(n >> (8 * i));
    write(length, 8);
    write(header.data(), header.size());
    for (const SafetensorsEntry& e : entries) {
      std::vector<float> values =
          transform_tensor(e, reader.shape_of(e.key), reader.read_full(e.key, OptimizerState::master));
      TRAINER_CHECK(int64_t(values.size()) * 4 == e.end - e.begin, "export_safetensors: size of " + e.key);
      write(values.data(), values.size() * 4);
    }
  });
}

}  // namespace

std::vector<SafetensorsEntry> safetensors_entries(const GptConfig& config) {
  // The HF folder's tensor map (app/hf/hf_folder.h): the same names, shapes and transforms.
  std::vector<SafetensorsEntry> out;
  int64_t offset = 0;
  for (const HfTensor& t : hf_tensors(config)) {
    SafetensorsEntry e;
    e.key = t.name;
    e.shape = t.hf_shape;
    e.transform = t.transform == HfTransform::transpose    ? SafetensorsTransform::transpose
                  : t.transform == HfTransform::vocab_rows ? SafetensorsTransform::drop_pad_rows
                                                           : SafetensorsTransform::copy;
    int64_t numel = 1;
    for (int64_t d : e.shape) numel *= d;
    e.begin = offset;
    e.end = offset + numel * 4;
    offset = e.end;
    out.push_back(e);
  }
  return out;
}

std::string safetensors_header(const std::vector<SafetensorsEntry>& entries) {
  std::string json = "{\"__metadata__\":{\"format\":\"pt\"}";
  for (const SafetensorsEntry& e : entries) {
    json += ",\"" + e.key + "\":{\"dtype\":\"F32\",\"shape\":[";
    for (size_t i = 0; i < e.shape.size(); ++i) json += (i ? "," : "") + std::to_string(e.shape[i]);
    json += "],\"data_offsets\":[" + std::to_string(e.begin) + "," + std::to_string(e.end) + "]}";
  }
  json += "}";
  while (json.size() % 8 != 0) json += ' ';
  return json;
}

std::string export_checkpoint(CheckpointReader& reader, ExportFormat format, const std::string& path,
                       int64_t max_shard_bytes) {
  switch (format) {
    case ExportFormat::llmc:
      if (reader.manifest().model.arch != ModelArch::gpt2)
        throw ConfigError("ckpt export --format llmc: " + reader.dir() + " holds a " +
                          model_arch_name(reader.manifest().model.arch) +
                          " model, and llm.c model files hold GPT-2 weights only; valid for it: --format safetensors");
      write_llmc_model(path, reader.manifest().model,
                       [&](const std::string& name) { return reader.read_full(name, OptimizerState::master); });
      return "";
    case ExportFormat::safetensors: export_safetensors(reader, path); return "";
    case ExportFormat::hf: return "tokenizer: " + export_hf_folder(reader, path, max_shard_bytes);
  }
  return "";
}

}  // namespace trainer
