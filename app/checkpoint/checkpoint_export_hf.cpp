// Hugging Face folder export (see checkpoint_export_hf.h).
#include "app/checkpoint/checkpoint_export_hf.h"

#include <yaml-cpp/yaml.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include <fmt/core.h>

#include "app/checkpoint/checkpoint_reader.h"
#include "app/hf/hf_folder.h"
#include "data/file_io.h"
#include "data/folder_publication.h"
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

// The names an export may write: what it replaces as one set (and what a fresh one refuses).
bool is_hf_export_name(const std::string& name) {
  static const char* const kFixed[] = {"config.json",    "generation_config.json", "model.safetensors",
                                       "model.safetensors.index.json", "tokenizer.json", "tokenizer_config.json",
                                       "vocab.json",     "merges.txt",             kPublishingMarker};
  for (const char* fixed : kFixed)
    if (name == fixed) return true;
  // model-NNNNN-of-NNNNN.safetensors
  if (name.size() != 32 || name.rfind("model-", 0) != 0 || name.compare(11, 4, "-of-") != 0 ||
      name.compare(20, 12, ".safetensors") != 0)
    return false;
  for (size_t i : {6, 7, 8, 9, 10, 15, 16, 17, 18, 19})
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

// Without --force, a folder that already holds files of an export is refused before anything
// is written: re-exporting is replacing, and that is the user's call.
void check_export_folder(const std::string& dir, ExportExisting existing) {
  if (existing == ExportExisting::replace) return;
  std::vector<std::string> found;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (is_hf_export_name(it->path().filename().string())) found.push_back(it->path().filename().string());
  if (found.empty()) return;
  std::sort(found.begin(), found.end());
  std::string list;
  for (size_t k = 0; k < found.size() && k < 4; ++k) list += (k ? ", " : "") + found[k];
  if (found.size() > 4) list += fmt::format(" and {} more", found.size() - 4);
  throw InputError(fmt::format("ckpt export --out '{}' already holds an export ({}); valid: a new or empty folder, "
                               "or --force to replace that whole set (files of other names are kept)",
                               dir, list));
}

// Tokenizer files, and the generation config's ids.
// Appends the names written to `names`; sets the BOS and EOS ids the folder declares.
std::string write_tokenizer(const std::string& dir, const std::string& recipe_yaml, std::vector<std::string>* names,
                            HfTokenIds* ids) {
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
    names->insert(names->end(), {"vocab.json", "merges.txt"});
    note = "vocab.json + merges.txt (GPT-2's encoder.json and vocab.bpe)";
  } else if (name == "byte") {
    note = "no tokenizer files: the byte tokenizer has no Hugging Face equivalent";
  } else {
    const std::string json = std::filesystem::is_directory(name, ec) ? name + "/tokenizer.json" : name;
    copy_file(json, dir + "/tokenizer.json");
    names->push_back("tokenizer.json");
    const std::string config = (std::filesystem::path(json).parent_path() / "tokenizer_config.json").string();
    note = "tokenizer.json";
    if (std::filesystem::exists(config, ec)) {
      copy_file(config, dir + "/tokenizer_config.json");
      names->push_back("tokenizer_config.json");
      note += " + tokenizer_config.json";
    }
  }
  std::string gen = "{\n  \"_from_model_config\": true";
  if (name != "byte") {
    const auto tokenizer = make_tokenizer(name, tok_dir, "data.tokenizer", bos, eos, "data.bos", "data.eos");
    // GPT-2's end-of-text both opens and ends its documents (transformers' GPT-2 config says
    // so); a tokenizer.json's ids are its own, and one it lacks is left out rather than guessed
    // (an EOS equal to the BOS would stop generation at the first token).
    const bool builtin = name == "gpt2";
    ids->bos = tokenizer->bos() >= 0 ? tokenizer->bos() : builtin ? tokenizer->eot() : -1;
    ids->eos = tokenizer->eos() >= 0 ? tokenizer->eos() : builtin ? tokenizer->eot() : -1;
    if (ids->bos >= 0) gen += fmt::format(",\n  \"bos_token_id\": {}", ids->bos);
    if (ids->eos >= 0) gen += fmt::format(",\n  \"eos_token_id\": {}", ids->eos);
  }
  write_file_atomically(dir + "/generation_config.json", "generation config", std::string_view(gen + "\n}\n"));
  names->push_back("generation_config.json");
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

std::string export_hf_folder(CheckpointReader& reader, const std::string& dir, int64_t max_shard_bytes,
                             ExportExisting existing) {
  if (max_shard_bytes < 1)
    throw ConfigError("ckpt export --max-shard-size " + std::to_string(max_shard_bytes) + ": valid: >= 1 byte");
  check_export_folder(dir, existing);
  // Every checksum first: a corrupted checkpoint leaves no folder behind.
  reader.verify_all();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError("ckpt export --out '" + dir + "': cannot create the folder: " + ec.message());
  const GptConfig& config = reader.manifest().model;
  const std::vector<Shard> shards = plan_shards(hf_tensors(config), max_shard_bytes);
  FolderPublication publication(dir, "ckpt export, pid " + std::to_string(::getpid()),
                                fmt::format("a Hugging Face folder of step {} from {}", reader.manifest().step,
                                            reader.dir()));
  std::vector<std::string> names = {"config.json"};
  if (shards.size() == 1) {
    write_safetensors_file(reader, shards[0].tensors, dir + "/model.safetensors");
    names.push_back("model.safetensors");
  } else {
    int64_t total = 0;
    std::string map;
    for (size_t k = 0; k < shards.size(); ++k) {
      const std::string file = fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, shards.size());
      write_safetensors_file(reader, shards[k].tensors, dir + "/" + file);
      names.push_back(file);
      total += shards[k].bytes;
      for (const HfTensor& t : shards[k].tensors) map += (map.empty() ? "" : ",\n") + fmt::format("    \"{}\": \"{}\"", t.name, file);
    }
    write_file_atomically(dir + "/model.safetensors.index.json", "safetensors index",
                          std::string_view(fmt::format("{{\n  \"metadata\": {{\"total_size\": {}}},\n  \"weight_map\": {{\n{}\n  }}\n}}\n", total, map)));
    names.push_back("model.safetensors.index.json");
  }
  HfTokenIds ids;
  const std::string note = write_tokenizer(dir, reader.manifest().recipe_yaml, &names, &ids);
  // Last of the set but the marker's removal: it names the tokenizer's ids, known only now.
  write_file_atomically(dir + "/config.json", "config.json", std::string_view(hf_config_json(config, ids)));
  publication.finish(names, is_hf_export_name);
  return note;
}

}  // namespace trainer
