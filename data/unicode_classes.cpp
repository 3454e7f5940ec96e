// Lookup of code point classes and strict UTF-8 decoding (see unicode_classes.h).
#include "data/unicode_classes.h"

namespace trainer {

CharClass char_class(uint32_t cp) {
  if (cp < 128) return kAsciiClasses[cp];
  size_t lo = 0, hi = kCodepointRangeCount;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const CodepointRange& r = kCodepointRanges[mid];
    if (cp < r.first) {
      hi = mid;
    } else if (cp > r.last) {
      lo = mid + 1;
    } else {
      return r.cls;
    }
  }
  return CharClass::other;
}

int utf8_next(const char* p, const char* end, uint32_t* cp) {
  const auto* s = reinterpret_cast<const unsigned char*>(p);
  const unsigned char b0 = s[0];
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  int len = 0;
  uint32_t value = 0, min_value = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, value = b0 & 0x1Fu, min_value = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, value = b0 & 0x0Fu, min_value = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, value = b0 & 0x07u, min_value = 0x10000;
  } else {
    *cp = kInvalidCodepoint;
    return 1;
  }
  if (end - p < len) {
    *cp = kInvalidCodepoint;
    return 1;
  }
  for (int i = 1; i < len; ++i) {
    if ((s[i] & 0xC0u) != 0x80u) {
      *cp = kInvalidCodepoint;
      return 1;
    }
    value = (value << 6) | (s[i] & 0x3Fu);
  }
  if (value < min_value || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
    *cp = kInvalidCodepoint;
    return 1;
  }
  *cp = value;
  return len;
}

void append_utf8(uint32_t cp, std::string* out) {
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

}  // namespace trainer
