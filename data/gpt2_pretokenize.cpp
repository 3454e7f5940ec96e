// GPT-2 pre-tokenisation (see gpt2_pretokenize.h). The alternatives of the pattern are tried
// in order at each position, as a backtracking regex engine would: the first that matches
// wins, and each is greedy.
#include "data/gpt2_pretokenize.h"

#include <cstddef>
#include <cstdint>

#include "data/unicode_classes.h"

namespace trainer {
namespace {

struct Cursor {
  const char* begin;
  const char* end;

  // Class of the code point at p and its length in bytes.
  CharClass at(const char* p, int* len) const {
    const auto b = static_cast<unsigned char>(*p);
    if (b < 0x80) {
      *len = 1;
      return kAsciiClasses[b];
    }
    uint32_t cp = 0;
    *len = utf8_next(p, end, &cp);
    return cp == kInvalidCodepoint ? CharClass::other : char_class(cp);
  }

  // End of the run of code points of class cls that starts at p.
  const char* run_end(const char* p, CharClass cls) const {
    while (p < end) {
      int len = 0;
      if (at(p, &len) != cls) break;
      p += len;
    }
    return p;
  }
};

// Length of a contraction ('s 't 're 've 'm 'll 'd) at p, which holds an apostrophe; 0 if
// there is none. Case-sensitive, as in the reference.
size_t contraction_length(const char* p, const char* end) {
  const ptrdiff_t left = end - p;
  if (left >= 2) {
    const char c = p[1];
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return 2;
  }
  if (left >= 3) {
    const char c = p[1], d = p[2];
    if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return 3;
  }
  return 0;
}

}  // namespace

void gpt2_pretokenize(std::string_view text, std::vector<std::string_view>* pieces) {
  const Cursor cur{text.data(), text.data() + text.size()};
  const char* p = cur.begin;
  while (p < cur.end) {
    int len0 = 0;
    const CharClass c0 = cur.at(p, &len0);
    const char* q = nullptr;  // end of the piece starting at p
    if (*p == '\'') {
      const size_t n = contraction_length(p, cur.end);
      if (n > 0) q = p + n;
    }
    if (!q && *p == ' ' && p + 1 < cur.end) {
      // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+" with the optional space.
      int len1 = 0;
      const CharClass c1 = cur.at(p + 1, &len1);
      if (c1 != CharClass::space) q = cur.run_end(p + 1 + len1, c1);
    }
    if (!q && c0 != CharClass::space) q = cur.run_end(p + len0, c0);
    if (!q) {
      // "\s+(?!\S)": the whitespace run, less its last code point when a non-space follows;
      // if that leaves nothing, "\s+" takes the single code point.
      const char* last = p;
      const char* e = p;
      while (e < cur.end) {
        int len = 0;
        if (cur.at(e, &len) != CharClass::space) break;
        last = e;
        e += len;
      }
      q = (e == cur.end || last == p) ? e : last;
    }
    pieces->emplace_back(p, static_cast<size_t>(q - p));
    p = q;
  }
}

}  // namespace trainer
