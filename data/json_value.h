// A JSON document in memory (RFC 8259), for the files the data layer reads: GPT-2's
// encoder.json and Hugging Face's tokenizer.json / tokenizer_config.json, config.json, the
// safetensors headers and index, JSONL lines. Objects keep their members in file order; a key
// that appears twice in one object (compared decoded) is an InputError naming it and both
// places, never a silent last-one-wins. Every value remembers its byte offset, so callers can
// report the line and column of a bad value. Strings come back decoded to UTF-8 (surrogate pairs joined; an
// unpaired surrogate is an error, since it has no UTF-8 form).
// Limits, so a hostile file cannot exhaust the stack: nesting depth <= kMaxJsonDepth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trainer {

enum class JsonKind : uint8_t { null, boolean, number, string, array, object };

const char* json_kind_name(JsonKind kind);

struct JsonValue {
  JsonKind kind = JsonKind::null;
  bool boolean = false;
  bool is_integer = false;  // a number written without fraction or exponent, within int64
  int64_t integer = 0;
  double number = 0;
  std::string text;  // string value
  std::vector<JsonValue> items;  // array
  std::vector<std::pair<std::string, JsonValue>> members;  // object, in file order
  size_t offset = 0;  // where the value starts in the document

  // Last member named key, or nullptr (also for non-objects).
  const JsonValue* find(std::string_view key) const;
};

constexpr int kMaxJsonDepth = 256;

// Parses a whole document; `file` only names it in errors, which are InputErrors of the form
// "FILE:LINE:COL: what".
JsonValue parse_json(std::string_view text, const std::string& file);

// A value as a message shows it: a number as written, a string quoted (excerpt: a
// hostile one neither breaks the line nor runs on), anything else by kind.
std::string json_shown(const JsonValue& v);

// "FILE:LINE:COL" of a byte offset in text (1-based line and column, columns in bytes).
std::string json_location(std::string_view text, size_t offset, const std::string& file);

}  // namespace trainer
