// Short excerpts of long user values for messages (see excerpt.h).
#include "kernels/base/excerpt.h"

namespace trainer {

Excerpt split_excerpt(std::string_view text) {
  if (text.size() <= kExcerptLimit) return {text, ""};
  size_t end = kExcerptBytes;
  // Back up over UTF-8 continuation bytes so the excerpt ends between characters.
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  return {text.substr(0, end), "... (" + std::to_string(text.size()) + " bytes)"};
}

std::string excerpt(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  const Excerpt e = split_excerpt(text);
  std::string out;
  for (char ch : e.shown) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) out += {'\\', 'x', kHex[u >> 4], kHex[u & 15]};
    else out += ch;
  }
  return out + e.tail;
}

}  // namespace trainer
