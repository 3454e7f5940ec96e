// Hugging Face model folders: the tensor map, config.json, the checks and the import (see
// hf_folder.h).
#include "app/hf/hf_folder.h"

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/core.h>

#include "app/hf/safetensors_file.h"
#include "data/file_io.h"
#include "data/json_value.h"
#include "kernels/base/errors.h"
#include "model/param_store.h"
#include "model/param_table.h"

namespace trainer {

namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

bool is_conv1d_weight(const std::string& name) {
  for (const char* suffix : {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"})
    if (ends_with(name, suffix)) return true;
  return false;
}

// Buffers transformers saves beside the weights and recomputes on load.
bool is_recomputed_buffer(const std::string& name) {
  return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias") ||
         ends_with(name, ".rotary_emb.inv_freq");
}

// Our name -> the folder's name: GPT-2 folders written by save_pretrained carry "transformer.".
std::string strip_prefix(const std::string& name) {
  return name.rfind("transformer.", 0) == 0 ? name.substr(12) : name;
}

struct ConfigReader {
  const std::string& file;
  const std::string& text;
  const JsonValue& root;

  const JsonValue* get(const char* key) const {
    const JsonValue* v = root.find(key);
    return v && v->kind != JsonKind::null ? v : nullptr;
  }
  int integer(const char* key, int fallback, bool required) const {
    const JsonValue* v = get(key);
    if (!v) {
      if (required) throw InputError(file + ": no \"" + key + "\" (an integer)");
      return fallback;
    }
    if (v->kind != JsonKind::number || !v->is_integer || v->integer < 0 || v->integer > (int64_t(1) << 31) - 1)
      throw InputError(json_location(text, v->offset, file) + ": \"" + key + "\" is not a non-negative integer");
    return int(v->integer);
  }
  double number(const char* key, double fallback) const {
    const JsonValue* v = get(key);
    if (!v) return fallback;
    if (v->kind != JsonKind::number)
      throw InputError(json_location(text, v->offset, file) + ": \"" + key + "\" is not a number");
    return v->number;
  }
  bool boolean(const char* key, bool fallback) const {
    const JsonValue* v = get(key);
    if (!v) return fallback;
    if (v->kind != JsonKind::boolean)
      throw InputError(json_location(text, v->offset, file) + ": \"" + key + "\" is not true or false");
    return v->boolean;
  }
  std::string string(const char* key, const std::string& fallback) const {
    const JsonValue* v = get(key);
    if (!v) return fallback;
    if (v->kind != JsonKind::string)
      throw InputError(json_location(text, v->offset, file) + ": \"" + key + "\" is not a string");
    return v->text;
  }
  void require(const char* key, bool ok, const std::string& value, const std::string& valid) const {
    if (!ok) throw InputError(file + ": \"" + key + "\" " + value + " is not implemented; valid: " + valid);
  }
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
    } else if (config.arch == ModelArch::gpt2 && is_conv1d_weight(spec.name)) {
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
  const std::string file = dir + "/config.json";
  const std::string text = read_file(file);
  const JsonValue root = parse_json(text, file);
  if (root.kind != JsonKind::object) throw InputError(file + ": not a JSON object");
  const ConfigReader r{file, text, root};
  const std::string type = r.string("model_type", "");
  GptConfig c;
  if (type == "gpt2") {
    c.arch = ModelArch::gpt2;
    c.n_layer = r.integer("n_layer", 0, true);
    c.n_head = r.integer("n_head", 0, true);
    c.d_model = r.integer("n_embd", 0, true);
    c.vocab_size = r.integer("vocab_size", 0, true);
    c.max_seq_len = r.integer("n_positions", 0, true);
    const std::string act = r.string("activation_function", "gelu_new");
    r.require("activation_function", act == "gelu_new", act, "gelu_new (the tanh GELU)");
    const double eps = r.number("layer_norm_epsilon", 1e-5);
    r.require("layer_norm_epsilon", eps == 1e-5, num(eps), "1e-05");
    const int inner = r.integer("n_inner", 4 * c.d_model, false);
    r.require("n_inner", inner == 4 * c.d_model, std::to_string(inner), "null or 4 x n_embd");
    r.require("tie_word_embeddings", r.boolean("tie_word_embeddings", true), "false", "true");
  } else if (type == "llama") {
    c.arch = ModelArch::llama;
    c.n_layer = r.integer("num_hidden_layers", 0, true);
    c.n_head = r.integer("num_attention_heads", 0, true);
    c.n_kv_head = r.integer("num_key_value_heads", c.n_head, false);
    c.d_model = r.integer("hidden_size", 0, true);
    c.ffn_dim = r.integer("intermediate_size", 0, true);
    c.vocab_size = r.integer("vocab_size", 0, true);
    c.max_seq_len = r.integer("max_position_embeddings", 0, true);
    c.norm_eps = float(r.number("rms_norm_eps", 1e-6));
    c.rope_theta = float(r.number("rope_theta", 10000.0));
    c.tie = r.boolean("tie_word_embeddings", false) ? TiedEmbeddings::tied : TiedEmbeddings::untied;
    const std::string act = r.string("hidden_act", "silu");
    r.require("hidden_act", act == "silu", act, "silu");
    r.require("attention_bias", !r.boolean("attention_bias", false), "true", "false");
    r.require("mlp_bias", !r.boolean("mlp_bias", false), "true", "false");
    if (c.n_head > 0 && c.d_model % c.n_head == 0) {
      const int head_dim = r.integer("head_dim", c.d_model / c.n_head, false);
      r.require("head_dim", head_dim == c.d_model / c.n_head, std::to_string(head_dim), "hidden_size / num_attention_heads");
    }
    if (const JsonValue* rs = r.get("rope_scaling")) {
      const ConfigReader s{file, text, *rs};
      const std::string kind = s.string("rope_type", s.string("type", ""));
      r.require("rope_scaling", kind == "llama3", "rope_type '" + kind + "'", "null or rope_type llama3");
      c.rope_scaling.factor = float(s.number("factor", 0));
      c.rope_scaling.low_freq_factor = float(s.number("low_freq_factor", 1));
      c.rope_scaling.high_freq_factor = float(s.number("high_freq_factor", 4));
      c.rope_scaling.original_context = s.integer("original_max_position_embeddings", 8192, false);
    }
  } else {
    throw InputError(file + ": model_type '" + type + "' is not implemented; valid: gpt2, llama");
  }
  c.padded_vocab = c.vocab_size;
  return c;
}

std::string hf_config_json(const GptConfig& c) {
  std::string j = "{\n";
  auto add = [&](const std::string& key, const std::string& value) {
    j += (j.size() > 2 ? ",\n" : "") + std::string("  \"") + key + "\": " + value;
  };
  if (c.arch == ModelArch::gpt2) {
    add("architectures", "[\"GPT2LMHeadModel\"]");
    add("model_type", "\"gpt2\"");
    add("n_layer", std::to_string(c.n_layer));
    add("n_head", std::to_string(c.n_head));
    add("n_embd", std::to_string(c.d_model));
    add("n_positions", std::to_string(c.max_seq_len));
    add("n_ctx", std::to_string(c.max_seq_len));
    add("n_inner", "null");
    add("activation_function", "\"gelu_new\"");
    add("layer_norm_epsilon", "1e-05");
    add("initializer_range", num(c.init_std));
    add("resid_pdrop", "0.0");
    add("embd_pdrop", "0.0");
    add("attn_pdrop", "0.0");
    add("scale_attn_weights", "true");
    add("tie_word_embeddings", "true");
  } else {
    add("architectures", "[\"LlamaForCausalLM\"]");
    add("model_type", "\"llama\"");
    add("num_hidden_layers", std::to_string(c.n_layer));
    add("num_attention_heads", std::to_string(c.n_head));
    add("num_key_value_heads", std::to_string(c.kv_heads()));
    add("hidden_size", std::to_string(c.d_model));
    add("head_dim", std::to_string(c.head_dim()));
    add("intermediate_size", std::to_string(c.ffn_dim));
    add("max_position_embeddings", std::to_string(c.max_seq_len));
    add("hidden_act", "\"silu\"");
    add("rms_norm_eps", fmt::format("{:.9g}", c.norm_eps));
    add("rope_theta", fmt::format("{:.9g}", c.rope_theta));
    if (c.rope_scaling.enabled())
      add("rope_scaling", fmt::format("{{\"rope_type\": \"llama3\", \"factor\": {:.9g}, \"low_freq_factor\": {:.9g}, "
                                      "\"high_freq_factor\": {:.9g}, \"original_max_position_embeddings\": {}}}",
                                      c.rope_scaling.factor, c.rope_scaling.low_freq_factor,
                                      c.rope_scaling.high_freq_factor, c.rope_scaling.original_context));
    else
      add("rope_scaling", "null");
    add("attention_bias", "false");
    add("mlp_bias", "false");
    add("initializer_range", num(c.init_std));
    add("tie_word_embeddings", c.tied() ? "true" : "false");
  }
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
  if (f.arch == ModelArch::llama && r.arch == ModelArch::llama) {
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
    problems.push_back("extra tensor " + key + " (in " + set.file_of(t) + ")");
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
          config.arch == ModelArch::llama ? " (or an untied model: tie_word_embeddings false, model.tie_embeddings: false)" : ""));
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
  for (HfTensor& t : hf_tensors(config)) specs[t.name] = t;
  std::map<std::string, std::string> keys;
  for (const auto& [key, t] : set.tensors()) keys[strip_prefix(key)] = key;
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
