// JSON reader (see json_value.h): recursive descent, RFC 8259 strings, numbers, literals.
#include "data/json_value.h"

#include <fmt/core.h>

#include <cmath>
#include <cstdlib>
#include <unordered_map>

#include "data/unicode_classes.h"
#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"

namespace trainer {

const char* json_kind_name(JsonKind kind) {
  switch (kind) {
    case JsonKind::null: return "null";
    case JsonKind::boolean: return "a boolean";
    case JsonKind::number: return "a number";
    case JsonKind::string: return "a string";
    case JsonKind::array: return "an array";
    case JsonKind::object: return "an object";
  }
  return "?";
}

const JsonValue* JsonValue::find(std::string_view key) const {
  for (size_t i = members.size(); i-- > 0;)
    if (members[i].first == key) return &members[i].second;
  return nullptr;
}

std::string json_shown(const JsonValue& v) {
  if (v.kind == JsonKind::number) return v.is_integer ? std::to_string(v.integer) : fmt::format("{}", v.number);
  if (v.kind == JsonKind::string) return "\"" + excerpt(v.text) + "\"";
  return json_kind_name(v.kind);
}

std::string json_location(std::string_view text, size_t offset, const std::string& file) {
  int line = 1, col = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return fmt::format("{}:{}:{}", file, line, col);
}

namespace {

// A key as a message shows it: in quotes, written back in JSON's escapes where it holds control
// characters, quotes or backslashes (so a message stays one printable line), cut to an excerpt.
std::string json_quoted(std::string_view key) {
  const Excerpt e = split_excerpt(key);
  std::string out = "\"";
  for (char ch : e.shown) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') out += {'\\', ch};
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\u{:04x}", u);
    else out += ch;
  }
  return out + "\"" + e.tail;
}

class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_space();
    if (pos_ < text_.size()) fail("unexpected text after the JSON value");
    return v;
  }

 private:
  // Keys compare decoded ("a" and "\u0061" are one key), as every reader looks them up.
  [[noreturn]] void duplicate_key(const std::string& key, size_t first, size_t again) {
    const std::string here = json_location(text_, again, ""), there = json_location(text_, first, "");
    // ":LINE:COL" each; the first place by column alone when on the same line (a JSONL line).
    const std::string first_line = there.substr(1, there.rfind(':') - 1);
    const std::string where = first_line == here.substr(1, here.rfind(':') - 1)
                                  ? "column " + there.substr(there.rfind(':') + 1)
                                  : "line " + first_line + ", column " + there.substr(there.rfind(':') + 1);
    pos_ = again;
    fail(fmt::format("duplicate key {} (first at {}); valid: each key once in an object", json_quoted(key), where));
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: {}", json_location(text_, pos_, file_), what));
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  JsonValue value(int depth) {
    if (depth > kMaxJsonDepth) fail(fmt::format("nesting deeper than {} levels", kMaxJsonDepth));
    skip_space();
    JsonValue v;
    v.offset = pos_;
    const char c = peek();
    if (c == '{') {
      v.kind = JsonKind::object;
      ++pos_;
      skip_space();
      if (peek() == '}') {
        ++pos_;
        return v;
      }
      // Each key's first place: a duplicate would otherwise let one value silently win over
      // another, and a later error blame the wrong key.
      std::unordered_map<std::string, size_t> first_at;
      while (true) {
        skip_space();
        if (peek() != '"') fail("expected a string key");
        const size_t key_at = pos_;
        std::string key = string_body();
        const auto [first, fresh] = first_at.emplace(key, key_at);
        if (!fresh) duplicate_key(key, first->second, key_at);
        skip_space();
        if (peek() != ':') fail("expected ':'");
        ++pos_;
        v.members.emplace_back(std::move(key), value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        if (peek() != '}') fail("expected ',' or '}'");
        ++pos_;
        return v;
      }
    }
    if (c == '[') {
      v.kind = JsonKind::array;
      ++pos_;
      skip_space();
      if (peek() == ']') {
        ++pos_;
        return v;
      }
      while (true) {
        v.items.push_back(value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        if (peek() != ']') fail("expected ',' or ']'");
        ++pos_;
        return v;
      }
    }
    if (c == '"') {
      v.kind = JsonKind::string;
      v.text = string_body();
      return v;
    }
    if (literal("true")) {
      v.kind = JsonKind::boolean;
      v.boolean = true;
      return v;
    }
    if (literal("false")) {
      v.kind = JsonKind::boolean;
      return v;
    }
    if (literal("null")) return v;
    if (c == '-' || (c >= '0' && c <= '9')) {
      number(&v);
      return v;
    }
    fail("expected a JSON value");
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  void number(JsonValue* v) {
    const size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      fail("expected a digit");
    }
    bool integral = true;
    if (peek() == '.') {
      integral = false;
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit after '.'");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      integral = false;
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit in the exponent");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    const std::string digits(text_.substr(start, pos_ - start));
    v->kind = JsonKind::number;
    v->number = std::strtod(digits.c_str(), nullptr);
    // Integers past 2^53 lose nothing here: they are read digit by digit, up to int64.
    if (integral && digits.size() <= 18) {
      v->is_integer = true;
      v->integer = std::strtoll(digits.c_str(), nullptr, 10);
    }
  }

  uint32_t hex4() {
    if (text_.size() - pos_ < 4) fail("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') v |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') v |= static_cast<uint32_t>(h - 'A' + 10);
      else fail("invalid hex digit in \\u escape");
    }
    return v;
  }

  uint32_t unicode_escape() {
    const uint32_t hi = hex4();
    if (hi < 0xD800 || hi > 0xDFFF) return hi;
    if (hi > 0xDBFF) fail("unpaired low surrogate in \\u escape");
    if (text_.size() - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u')
      fail("unpaired high surrogate in \\u escape");
    pos_ += 2;
    const uint32_t lo = hex4();
    if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate not followed by a low surrogate");
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
  }

  // At the opening quote; returns the decoded string and leaves pos_ after the closing one.
  std::string string_body() {
    ++pos_;
    std::string out;
    while (true) {
      const size_t run = pos_;
      while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\\' &&
             static_cast<unsigned char>(text_[pos_]) >= 0x20)
        ++pos_;
      out.append(text_.data() + run, pos_ - run);
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        --pos_;
        fail("control character inside a string");
      }
      if (pos_ >= text_.size()) fail("unterminated escape");
      const char e = text_[pos_++];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': append_utf8(unicode_escape(), &out); break;
        default: --pos_; fail(fmt::format("invalid escape '\\{}'", e));
      }
    }
  }

  std::string_view text_;
  const std::string& file_;
  size_t pos_ = 0;
};

}  // namespace

JsonValue parse_json(std::string_view text, const std::string& file) {
  return Parser(text, file).document();
}

}  // namespace trainer
