// BOS/EOS defaults from tokenizer_config.json and their overrides (see tokenizer_config.h).
#include "data/tokenizer_config.h"

#include <fmt/core.h>

#include <filesystem>

#include "data/file_io.h"
#include "data/json_value.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

// A special token in tokenizer_config.json: "text", {"content": "text", ...} or null.
std::string token_text(const JsonValue* v, const std::string& key, const std::string& text,
                       const std::string& file) {
  if (!v || v->kind == JsonKind::null) return "";
  if (v->kind == JsonKind::string) return v->text;
  if (v->kind == JsonKind::object) {
    const JsonValue* c = v->find("content");
    if (c && c->kind == JsonKind::string) return c->text;
  }
  throw InputError(fmt::format("{}: {}: expected a token (a string or an object with \"content\"), "
                               "found {}", json_location(text, v->offset, file), key,
                               json_kind_name(v->kind)));
}

// true / false / absent (-1).
int flag(const JsonValue& doc, const std::string& key, const std::string& text, const std::string& file) {
  const JsonValue* v = doc.find(key);
  if (!v || v->kind == JsonKind::null) return -1;
  if (v->kind != JsonKind::boolean)
    throw InputError(fmt::format("{}: {}: expected true or false, found {}",
                                 json_location(text, v->offset, file), key, json_kind_name(v->kind)));
  return v->boolean ? 1 : 0;
}

}  // namespace

DocumentMarkNames default_document_marks(const std::string& json_path) {
  const std::string file = (std::filesystem::path(json_path).parent_path() / "tokenizer_config.json").string();
  DocumentMarkNames marks;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return marks;  // read_file refuses a FIFO or a device
  const std::string text = read_file(file);
  const JsonValue doc = parse_json(text, file);
  if (doc.kind != JsonKind::object)
    throw InputError(fmt::format("{}: expected a JSON object, found {}", file, json_kind_name(doc.kind)));
  const std::string bos = token_text(doc.find("bos_token"), "bos_token", text, file);
  const std::string eos = token_text(doc.find("eos_token"), "eos_token", text, file);
  // Options by which the reference changes the text before encoding: not implemented.
  for (const char* key : {"remove_space", "do_lowercase_and_remove_accent"})
    if (flag(doc, key, text, file) == 1)
      throw ConfigError(fmt::format("{}: {}: {} true is not implemented (the reference rewrites the "
                                    "text with it before encoding)",
                                    json_location(text, doc.find(key)->offset, file), key, key));
  const int add_bos = flag(doc, "add_bos_token", text, file);
  const int add_eos = flag(doc, "add_eos_token", text, file);
  if (add_bos == 1 || add_bos == -1) marks.bos = bos;
  if (add_eos == 1 || (add_eos == -1 && marks.bos.empty())) marks.eos = eos;
  return marks;
}

int32_t resolve_document_mark(const Tokenizer& tok, const std::string& value, int32_t fallback,
                              const std::string& what) {
  if (value == "auto") return fallback;
  if (value == "none") return -1;
  const int32_t id = tok.token_id(value);
  if (id < 0)
    throw ConfigError(fmt::format("{}: the tokenizer has no token \"{}\" (valid: auto, none, or "
                                  "the text of a token such as a special token)", what, value));
  return id;
}

}  // namespace trainer
