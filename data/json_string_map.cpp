// Flat JSON object of integers (see json_string_map.h): a small recursive-descent reader that
// follows RFC 8259 for strings, whitespace and integers.
#include "data/json_string_map.h"

#include <fmt/core.h>

#include "kernels/base/errors.h"

namespace trainer {
namespace {

class Reader {
 public:
  Reader(std::string_view text, const std::string& file) : text_(text), file_(file) {}

  [[noreturn]] void fail(const std::string& what) const {
    int line = 1, col = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw InputError(fmt::format("{}:{}:{}: {} (expected a JSON object of token -> integer id)",
                                 file_, line, col, what));
  }

  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void expect(char c) {
    skip_space();
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }

  std::string read_string() {
    skip_space();
    if (peek() != '"') fail("expected a string");
    ++pos_;
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character inside a string");
      if (c != '\\') {
        out.push_back(c);
        continue;
      }
      if (at_end()) fail("unterminated escape");
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
        case 'u': append_utf8(read_unicode_escape(), &out); break;
        default: --pos_; fail(fmt::format("invalid escape '\\{}'", e));
      }
    }
  }

  int64_t read_integer() {
    skip_space();
    const size_t start = pos_;
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++pos_;
    }
    if (peek() < '0' || peek() > '9') fail("expected an integer");
    int64_t value = 0;
    while (peek() >= '0' && peek() <= '9') {
      if (value > (INT64_C(1) << 40)) fail("integer too large");
      value = value * 10 + (text_[pos_++] - '0');
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E') {
      pos_ = start;
      fail("expected an integer, found a number with a fraction or exponent");
    }
    return negative ? -value : value;
  }

 private:
  uint32_t read_hex4() {
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

  uint32_t read_unicode_escape() {
    const uint32_t hi = read_hex4();
    if (hi < 0xD800 || hi > 0xDFFF) return hi;
    if (hi > 0xDBFF) fail("unpaired low surrogate in \\u escape");
    if (text_.size() - pos_ < 2 || text_[pos_] != '\\' || text_[pos_ + 1] != 'u')
      fail("unpaired high surrogate in \\u escape");
    pos_ += 2;
    const uint32_t lo = read_hex4();
    if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate not followed by a low surrogate");
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
  }

  static void append_utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  std::string_view text_;
  const std::string& file_;
  size_t pos_ = 0;
};

}  // namespace

std::vector<std::pair<std::string, int64_t>> parse_json_int_map(std::string_view text,
                                                                 const std::string& file) {
  Reader r(text, file);
  std::vector<std::pair<std::string, int64_t>> out;
  r.expect('{');
  r.skip_space();
  if (r.peek() == '}') {
    r.expect('}');
  } else {
    while (true) {
      std::string key = r.read_string();
      r.expect(':');
      const int64_t value = r.read_integer();
      out.emplace_back(std::move(key), value);
      r.skip_space();
      if (r.peek() == ',') {
        r.expect(',');
        continue;
      }
      r.expect('}');
      break;
    }
  }
  r.skip_space();
  if (!r.at_end()) r.fail("unexpected text after the closing '}'");
  return out;
}

}  // namespace trainer
