// Hugging Face model folders: the tensor map, config.json, the checks and the import (see
// hf_folder.h).
#include "app/hf/hf_folder.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include <fmt/core.h>

#include "app/hf/safetensors_file.h"
#include "data/file_io.h"
#include "data/folder_publication.h"
#include "data/json_value.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"
#include "model/param_store.h"
#include "model/param_table.h"
#include "model/weights_finite.h"

namespace trainer {

namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// A weight the family's folder stores (in, out), the transpose of ours (GPT-2's Conv1D).
bool is_transposed(const ModelFamily& family, const std::string& name) {
  for (const std::string& suffix : family.hf.transposed)
    if (ends_with(name, suffix.c_str())) return true;
  return false;
}

// Buffers transformers saves beside the weights and recomputes on load, of any family (a name
// one family recomputes is never another's weight).
bool is_recomputed_buffer(const std::string& name) {
  for (const ModelFamily* family : model_families())
    for (const std::string& suffix : family->hf.recomputed)
      if (ends_with(name, suffix.c_str())) return true;
  return false;
}

// Our name -> the folder's name: GPT-2 folders written by save_pretrained carry "transformer.".
std::string strip_prefix(const std::string& name) {
  return name.rfind("transformer.", 0) == 0 ? name.substr(12) : name;
}

// config.json (or an object in it) as the families' readers read it.
class ConfigReader final : public HfConfigSource {
 public:
  ConfigReader(const std::string& file, const std::string& text, const JsonValue& root)
      : file_(file), text_(text), root_(root) {}

  const JsonValue* get(const char* key) const {
    const JsonValue* v = root_.find(key);
    return v && v->kind != JsonKind::null ? v : nullptr;
  }
  int integer(const char* key, int fallback, HfKey need, int least) const override {
    const JsonValue* v = get(key);
    if (!v) {
      if (need == HfKey::required)
        throw InputError(file_ + ": no \"" + key + "\" (an integer >= " + std::to_string(least) + ")");
      return fallback;
    }
    if (v->kind != JsonKind::number || !v->is_integer || v->integer < least || v->integer > (int64_t(1) << 31) - 1)
      throw InputError(json_location(text_, v->offset, file_) + ": \"" + key + "\" is " + json_shown(*v) +
                       "; valid: an integer from " + std::to_string(least) + " to 2147483647");
    return int(v->integer);
  }
  double number(const char* key, double fallback, HfNumber range) const override {
    const JsonValue* v = get(key);
    if (!v) return fallback;
    // Checked as the float the model keeps: 1e300 would be inf there, and 1e-50 zero.
    const float kept = v->kind == JsonKind::number && std::fabs(v->number) <= double(std::numeric_limits<float>::max())
                           ? float(v->number)
                           : std::numeric_limits<float>::infinity();
    const bool in_range = range == HfNumber::positive       ? kept > 0
                          : range == HfNumber::non_negative ? kept >= 0
                                                            : true;
    if (v->kind != JsonKind::number || !std::isfinite(kept) || !in_range)
      throw InputError(json_location(text_, v->offset, file_) + ": \"" + key + "\" is " + json_shown(*v) +
                       "; valid: a finite " +
                       (range == HfNumber::positive       ? "number above 0"
                        : range == HfNumber::non_negative ? "number >= 0"
                                                          : "number") +
                       " within a float's range");
    return v->number;
  }
  bool boolean(const char* key, bool fallback) const override {
    const JsonValue* v = get(key);
    if (!v) return fallback;
    if (v->kind != JsonKind::boolean)
      throw InputError(json_location(text_, v->offset, file_) + ": \"" + key + "\" is not true or false");
    return v->boolean;
  }
  std::string string(const char* key, const std::string& fallback) const override {
    const JsonValue* v = get(key);
    if (!v) return fallback;
    if (v->kind != JsonKind::string)
      throw InputError(json_location(text_, v->offset, file_) + ": \"" + key + "\" is not a string");
    return v->text;
  }
  std::unique_ptr<HfConfigSource> object(const char* key) const override {
    const JsonValue* v = get(key);
    if (v && v->kind != JsonKind::object)
      throw InputError(json_location(text_, v->offset, file_) + ": \"" + key + "\" is " + json_shown(*v) +
                       "; valid: an object, or null");
    return v ? std::make_unique<ConfigReader>(file_, text_, *v) : nullptr;
  }
  void require(const char* key, bool ok, const std::string& value, const std::string& valid) const override {
    if (!ok)
      throw InputError(file_ + ": \"" + key + "\" " + excerpt(value) + " is not implemented; valid: " + valid);
  }

 private:
  const std::string& file_;
  const std::string& text_;
  const JsonValue& root_;
};

std::string num(double v) { return fmt::format("{}", v); }

}  // namespace

std::vector<HfTensor> hf_tensors(const GptConfig& config) {
  std::vector<HfTensor> out;
  for (const ParamSpec& spec : param_table(config)) {
    HfTensor t{spec.name, spec.shape, HfTransform::copy};
    if (spec.name == embedding_name(config) || spec.name == "lm_head.weight") {
      t.transform = HfTransform::vocab_rows;
      t.hf_shape[0] = config.vocab_size;
    } else if (is_transposed(config.family(), spec.name)) {
      t.transform = HfTransform::transpose;
      t.hf_shape = {spec.shape[1], spec.shape[0]};
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<float> to_hf_values(const HfTensor& t, const std::vector<int64_t>& stored, std::vector<float> values) {
  switch (t.transform) {
    case HfTransform::copy: return values;
    case HfTransform::vocab_rows:  // the padding rows are dropped
      values.resize(size_t(t.hf_shape[0] * t.hf_shape[1]));
      return values;
    case HfTransform::transpose: {
      const int64_t rows = stored[0], cols = stored[1];  // ours (out, in)
      std::vector<float> out(values.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) out[size_t(c * rows + r)] = values[size_t(r * cols + c)];
      return out;
    }
  }
  return values;
}

bool is_hf_folder(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) && std::filesystem::exists(path + "/config.json", ec);
}

bool is_llmc_file_path(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) || std::filesystem::path(path).extension() == ".bin";
}

GptConfig gpt_config_from_hf(const std::string& dir) {
  check_folder_published(dir, "model folder '" + dir + "'");
  const std::string file = dir + "/config.json";
  return gpt_config_from_hf_json(read_file(file), file);
}

GptConfig gpt_config_from_hf_json(const std::string& text, const std::string& file) {
  const JsonValue root = parse_json(text, file);
  if (root.kind != JsonKind::object) throw InputError(file + ": not a JSON object");
  const ConfigReader r(file, text, root);
  const std::string type = r.string("model_type", "");
  const ModelFamily* family = family_by_hf_type(type);
  if (!family) {
    std::string valid;
    for (const ModelFamily* f : model_families()) valid += (valid.empty() ? "" : ", ") + std::string(f->hf.model_type);
    throw InputError(file + ": model_type '" + excerpt(type) + "' is not implemented; valid: " + valid);
  }
  GptConfig c = family->hf.read_config(r);
  c.padded_vocab = c.vocab_size;
  return c;
}

std::string hf_config_json(const GptConfig& c, const HfTokenIds& ids) {
  std::string j = "{\n";
  auto add = [&](const std::string& key, const std::string& value) {
    j += (j.size() > 2 ? ",\n" : "") + std::string("  \"") + key + "\": " + value;
  };
  for (const auto& [key, value] : c.family().hf.write_config(c)) add(key, value);
  if (ids.bos >= 0) add("bos_token_id", std::to_string(ids.bos));
  if (ids.eos >= 0) add("eos_token_id", std::to_string(ids.eos));
  add("vocab_size", std::to_string(c.vocab_size));
  add("torch_dtype", "\"float32\"");
  j += "\n}\n";
  return j;
}

void check_hf_config(const std::string& recipe_path, const std::string& dir, const GptConfig& f,
                     const GptConfig& r) {
  std::vector<std::string> diffs;
  auto cmp = [&](const char* key, const std::string& folder, const std::string& recipe) {
    if (folder != recipe) diffs.push_back(fmt::format("  {}: folder {}, recipe {}", key, folder, recipe));
  };
  auto i = [](int v) { return std::to_string(v); };
  cmp("model.arch", model_arch_name(f.arch), model_arch_name(r.arch));
  cmp("model.n_layer", i(f.n_layer), i(r.n_layer));
  cmp("model.n_head", i(f.n_head), i(r.n_head));
  cmp("model.d_model", i(f.d_model), i(r.d_model));
  cmp("model.vocab_size", i(f.vocab_size), i(r.vocab_size));
  cmp("model.seq_len", i(f.max_seq_len), i(r.max_seq_len));
  if (f.family().keys == ConfigKeys::llama && r.family().keys == ConfigKeys::llama) {
    cmp("model.n_kv_head", i(f.kv_heads()), i(r.kv_heads()));
    cmp("model.ffn_dim", i(f.ffn_dim), i(r.ffn_dim));
    cmp("model.norm_eps", num(f.norm_eps), num(r.norm_eps));
    cmp("model.rope_theta", num(f.rope_theta), num(r.rope_theta));
    cmp("model.tie_embeddings", f.tied() ? "true" : "false", r.tied() ? "true" : "false");
    cmp("model.qk_norm", "false", r.qk_norm == QkNorm::on ? "true" : "false");
    cmp("model.rope_scaling.factor", num(f.rope_scaling.factor), num(r.rope_scaling.factor));
    if (f.rope_scaling.enabled() && r.rope_scaling.enabled()) {
      cmp("model.rope_scaling.low_freq_factor", num(f.rope_scaling.low_freq_factor),
          num(r.rope_scaling.low_freq_factor));
      cmp("model.rope_scaling.high_freq_factor", num(f.rope_scaling.high_freq_factor),
          num(r.rope_scaling.high_freq_factor));
      cmp("model.rope_scaling.original_context", i(f.rope_scaling.original_context),
          i(r.rope_scaling.original_context));
    }
  }
  if (diffs.empty()) return;
  std::string msg = recipe_path + ": model.init_from '" + dir + "' (config.json) differs from the recipe's model:";
  for (const std::string& d : diffs) msg += "\n" + d;
  throw ConfigError(msg + "\nvalid: a model section that matches the folder (or model.from: the folder)");
}

void check_hf_tensors(const std::string& dir, const SafetensorsSet& set, const GptConfig& config) {
  std::vector<std::string> problems;
  std::set<std::string> used;
  auto shape_text = [](const std::vector<int64_t>& s) {
    std::string t = "[";
    for (size_t k = 0; k < s.size(); ++k) t += (k ? ", " : "") + std::to_string(s[k]);
    return t + "]";
  };
  std::map<std::string, std::string> by_ours;  // our name -> the folder's key
  for (const auto& [key, t] : set.tensors()) by_ours[strip_prefix(key)] = key;
  for (const HfTensor& t : hf_tensors(config)) {
    auto it = by_ours.find(t.name);
    if (it == by_ours.end()) {
      problems.push_back("missing tensor " + t.name + " " + shape_text(t.hf_shape));
      continue;
    }
    used.insert(it->second);
    const StTensor& st = set.tensors().at(it->second);
    if (st.shape != t.hf_shape)
      problems.push_back("tensor " + it->second + " has shape " + shape_text(st.shape) + ", expected " +
                         shape_text(t.hf_shape));
  }
  for (const auto& [key, t] : set.tensors()) {
    if (used.count(key) || is_recomputed_buffer(key)) continue;
    // A tied model's folder may repeat the token table as the head (save_pretrained omits it);
    // check_tied_head compares the values.
    if (config.tied() && strip_prefix(key) == "lm_head.weight") {
      const std::vector<int64_t> table = {config.vocab_size, config.d_model};
      if (t.shape != table)
        problems.push_back("tensor " + key + " has shape " + shape_text(t.shape) + ", expected " +
                           shape_text(table) + " (the token table's: the model ties the head to it)");
      continue;
    }
    problems.push_back("extra tensor " + excerpt(key) + " (in " + set.file_of(t) + ")");
  }
  if (problems.empty()) return;
  std::string msg = "model folder '" + dir + "' does not hold the weights of " + describe_shape(config) + ":";
  for (const std::string& p : problems) msg += "\n  " + p;
  throw InputError(msg);
}

void check_tied_head(const std::string& dir, const SafetensorsSet& set, const GptConfig& config) {
  if (!config.tied()) return;
  std::string head, table;
  for (const auto& [key, t] : set.tensors()) {
    if (strip_prefix(key) == "lm_head.weight") head = key;
    if (strip_prefix(key) == embedding_name(config)) table = key;
  }
  if (head.empty() || table.empty()) return;
  const int64_t n = set.tensors().at(head).numel();
  constexpr int64_t kChunk = int64_t(1) << 20;
  std::vector<float> a(size_t(std::min(n, kChunk))), b(a.size());
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t end = std::min(n, begin + kChunk);
    set.read(head, {begin, end}, a.data());
    set.read(table, {begin, end}, b.data());
    for (int64_t k = 0; k < end - begin; ++k) {
      if (std::memcmp(&a[size_t(k)], &b[size_t(k)], 4) == 0) continue;
      const int64_t at = begin + k;
      throw InputError(fmt::format(
          "model folder '{}': tensor {} (in {}) differs from {} at [{}, {}] ({} vs {}), but the model ({}) "
          "ties the head to the token table; valid: a folder without {}, or with one equal to {}{}",
          dir, head, set.file_of(set.tensors().at(head)), table, at / config.d_model, at % config.d_model,
          a[size_t(k)], b[size_t(k)], describe_shape(config), head, table,
          config.family().tying == HeadTying::optional
              ? " (or an untied model: tie_word_embeddings false, model.tie_embeddings: false)"
              : ""));
    }
  }
}

void load_hf_into(ParamStore& store, const std::string& dir, const std::string& recipe_path) {
  const GptConfig& config = store.layout().config();
  check_hf_config(recipe_path, dir, gpt_config_from_hf(dir), config);
  const SafetensorsSet set(dir);
  check_hf_tensors(dir, set, config);
  check_tied_head(dir, set, config);
  std::map<std::string, HfTensor> specs;
  std::map<std::string, std::string> keys;
  for (const auto& [key, t] : set.tensors()) keys[strip_prefix(key)] = key;
  // Every tensor loaded, whole, on every rank first: the check llm.c files get too.
  std::vector<std::pair<std::string, int64_t>> loaded;
  for (HfTensor& t : hf_tensors(config)) {
    int64_t n = 1;
    for (int64_t d : t.hf_shape) n *= d;
    loaded.push_back({keys.at(t.name), n});
    specs[t.name] = t;
  }
  check_weights_finite(loaded, [&](const std::string& key, Range range, float* out) { set.read(key, range, out); },
                       "Hugging Face folder '" + dir + "'");
  store.load([&](const ParamSpec& spec, Range range, float* out) {
    const HfTensor& t = specs.at(spec.name);
    const std::string& key = keys.at(spec.name);
    switch (t.transform) {
      case HfTransform::copy: set.read(key, range, out); return;
      case HfTransform::vocab_rows: {
        // Rows past vocab_size are padding: zero, as a fresh init leaves them.
        const int64_t real = t.hf_shape[0] * t.hf_shape[1];
        const int64_t end = std::min(range.end, real);
        if (end > range.begin) set.read(key, {range.begin, end}, out);
        for (int64_t k = std::max(range.begin, end); k < range.end; ++k) out[k - range.begin] = 0.0f;
        return;
      }
      case HfTransform::transpose: {
        const int64_t rows = spec.shape[0], cols = spec.shape[1];  // ours (out, in)
        for (int64_t k = range.begin; k < range.end; ++k) {
          const int64_t r = k / cols, c = k % cols;
          set.read(key, {c * rows + r, c * rows + r + 1}, out + (k - range.begin));
        }
        return;
      }
    }
  });
}

}  // namespace trainer
