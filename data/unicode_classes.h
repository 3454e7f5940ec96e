// Code point classes for GPT-2 pre-tokenisation, a UTF-8 decoder that never fails, and the
// encoder.
// Classes follow the reference encoder's JavaScript regular expression: letter = \p{L},
// number = \p{N}, space = JavaScript \s (Unicode White_Space plus U+FEFF, without U+0085 and
// U+001C..U+001F), other = the rest. The table is generated from node's own regex engine
// (scripts/reference/gen_unicode_classes.js), so it matches the reference by construction.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace trainer {

enum class CharClass : uint8_t { other, letter, number, space };

struct CodepointRange {
  uint32_t first;
  uint32_t last;
  CharClass cls;
};

// Generated tables (unicode_classes_table.cpp): ASCII by index, the rest as sorted,
// disjoint ranges of code points whose class is not other.
extern const CharClass kAsciiClasses[128];
extern const CodepointRange kCodepointRanges[];
extern const size_t kCodepointRangeCount;

// A code point outside U+0000..U+10FFFF: marks one byte that is not valid UTF-8.
constexpr uint32_t kInvalidCodepoint = 0xFFFFFFFFu;

CharClass char_class(uint32_t cp);

// Decodes the UTF-8 sequence at p (p < end) into *cp and returns its length in bytes.
// A byte that does not start a valid sequence (stray continuation, overlong form, surrogate,
// value above U+10FFFF, truncated sequence) is consumed alone as kInvalidCodepoint, whose
// class is other: invalid input still tokenizes, byte for byte.
int utf8_next(const char* p, const char* end, uint32_t* cp);

// Appends the UTF-8 encoding of cp (at most U+10FFFF) to *out.
void append_utf8(uint32_t cp, std::string* out);

}  // namespace trainer
