// Hugging Face folder export (see checkpoint_export_hf.h).
#include "app/checkpoint/checkpoint_export_hf.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>

#include <fmt/core.h>

#include "app/checkpoint/checkpoint_reader.h"
#include "app/hf/hf_folder.h"
#include "data/file_io.h"
#include "data/tokenizer.h"
#include "kernels/base/atomic_file.h"
#include "kernels/base/check.h"
#include "kernels/base/errors.h"

namespace trainer {

namespace {

struct Shard {
  std::vector<HfTensor> tensors;
  int64_t bytes = 0;
};

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Tensors in table order, a new shard whenever the next tensor would pass the limit (a
// tensor larger than the limit gets a shard of its own, as transformers does).
std::vector<Shard> plan_shards(const std::vector<HfTensor>& tensors, int64_t max_bytes) {
  std::vector<Shard> shards(1);
  for (const HfTensor& t : tensors) {
    const int64_t bytes = numel(t.hf_shape) * 4;
    if (!shards.back().tensors.empty() && shards.back().bytes + bytes > max_bytes) shards.emplace_back();
    shards.back().tensors.push_back(t);
    shards.back().bytes += bytes;
  }
  return shards;
}

void copy_file(const std::string& from, const std::string& to) {
  write_file_atomically(to, "tokenizer file", std::string_view(read_file(from)));
}

// Tokenizer files, and the generation config's ids.
std::string write_tokenizer(const std::string& dir, const std::string& recipe_yaml) {
  const YAML::Node recipe = YAML::Load(recipe_yaml);
  const YAML::Node data = recipe["data"];
  const std::string name = data && data["tokenizer"] ? data["tokenizer"].as<std::string>() : "gpt2";
  const std::string tok_dir =
      data && data["tokenizer_dir"] ? data["tokenizer_dir"].as<std::string>() : "datasets/tokenizer";
  const std::string bos = data && data["bos"] ? data["bos"].as<std::string>() : "auto";
  const std::string eos = data && data["eos"] ? data["eos"].as<std::string>() : "auto";
  std::error_code ec;
  std::string note;
  if (name == "gpt2") {
    if (!std::filesystem::exists(tok_dir + "/encoder.json", ec) || !std::filesystem::exists(tok_dir + "/vocab.bpe", ec))
      throw InputError("ckpt export --format hf: the recipe's gpt2 tokenizer files " + tok_dir +
                       "/encoder.json and vocab.bpe are missing (data.tokenizer_dir); fetch them with "
                       "scripts/fetch_data.sh or run from the directory the recipe was trained in");
    copy_file(tok_dir + "/encoder.json", dir + "/vocab.json");
    copy_file(tok_dir + "/vocab.bpe", dir + "/merges.txt");
    note = "vocab.json + merges.txt (GPT-2's encoder.json and vocab.bpe)";
  } else if (name == "byte") {
    note = "no tokenizer files: the byte tokenizer has no Hugging Face equivalent";
  } else {
    const std::string json = std::filesystem::is_directory(name, ec) ? name + "/tokenizer.json" : name;
    copy_file(json, dir + "/tokenizer.json");
    const std::string config = (std::filesystem::path(json).parent_path() / "tokenizer_config.json").string();
    note = "tokenizer.json";
    if (std::filesystem::exists(config, ec)) {
      copy_file(config, dir + "/tokenizer_config.json");
      note += " + tokenizer_config.json";
    }
  }
  std::string gen = "{\n  \"_from_model_config\": true";
  if (name != "byte") {
    const auto tokenizer = make_tokenizer(name, tok_dir, "data.tokenizer", bos, eos, "data.bos", "data.eos");
    const int32_t b = tokenizer->bos() >= 0 ? tokenizer->bos() : tokenizer->eot();
    const int32_t e = tokenizer->eos() >= 0 ? tokenizer->eos() : tokenizer->eot();
    if (b >= 0) gen += fmt::format(",\n  \"bos_token_id\": {}", b);
    if (e >= 0) gen += fmt::format(",\n  \"eos_token_id\": {}", e);
  }
  write_file_atomically(dir + "/generation_config.json", "generation config", std::string_view(gen + "\n}\n"));
  return note;
}

}  // namespace

std::string safetensors_header(const std::vector<HfTensor>& tensors) {
  std::string json = "{\"__metadata__\":{\"format\":\"pt\"}";
  int64_t offset = 0;
  for (const HfTensor& t : tensors) {
    const int64_t end = offset + numel(t.hf_shape) * 4;
    json += ",\"" + t.name + "\":{\"dtype\":\"F32\",\"shape\":[";
    for (size_t k = 0; k < t.hf_shape.size(); ++k) json += (k ? "," : "") + std::to_string(t.hf_shape[k]);
    json += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  json += "}";
  while (json.size() % 8 != 0) json += ' ';
  return json;
}

void write_safetensors_file(CheckpointReader& reader, const std::vector<HfTensor>& tensors, const std::string& path) {
  const std::string json = safetensors_header(tensors);
  write_file_atomically(path, "safetensors file", [&](const AtomicWriteFn& write) {
    unsigned char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(uint64_t(json.size()) >> (8 * i));
    write(length, 8);
    write(json.data(), json.size());
    for (const HfTensor& t : tensors) {
      const std::vector<float> values =
          to_hf_values(t, reader.shape_of(t.name), reader.read_full(t.name, OptimizerState::master));
      TRAINER_CHECK(int64_t(values.size()) == numel(t.hf_shape), "write_safetensors_file: size of " + t.name);
      write(values.data(), values.size() * 4);
    }
  });
}

std::string export_hf_folder(CheckpointReader& reader, const std::string& dir, int64_t max_shard_bytes) {
  if (max_shard_bytes < 1)
    throw ConfigError("ckpt export --max-shard-size " + std::to_string(max_shard_bytes) + ": valid: >= 1 byte");
  // Every checksum first: a corrupted checkpoint leaves no folder behind.
  reader.verify_all();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("ckpt export --out '" + dir + "': cannot create the folder: " + ec.message());
  const GptConfig& config = reader.manifest().model;
  write_file_atomically(dir + "/config.json", "config.json", std::string_view(hf_config_json(config)));
  const std::vector<Shard> shards = plan_shards(hf_tensors(config), max_shard_bytes);
  if (shards.size() == 1) {
    write_safetensors_file(reader, shards[0].tensors, dir + "/model.safetensors");
  } else {
    int64_t total = 0;
    std::string map;
    for (size_t k = 0; k < shards.size(); ++k) {
      const std::string file = fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, shards.size());
      write_safetensors_file(reader, shards[k].tensors, dir + "/" + file);
      total += shards[k].bytes;
      for (const HfTensor& t : shards[k].tensors) map += (map.empty() ? "" : ",\n") + fmt::format("    \"{}\": \"{}\"", t.name, file);
    }
    write_file_atomically(dir + "/model.safetensors.index.json", "safetensors index",
                          std::string_view(fmt::format("{{\n  \"metadata\": {{\"total_size\": {}}},\n  \"weight_map\": {{\n{}\n  }}\n}}\n", total, map)));
  }
  return write_tokenizer(dir, reader.manifest().recipe_yaml);
}

}  // namespace trainer
