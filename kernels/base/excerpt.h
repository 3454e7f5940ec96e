// User values as messages quote them. A message names the value it refuses, but a value can
// be megabytes (a 50 MB file name in a manifest, a pasted file in a recipe or --set): a value
// longer than kExcerptLimit bytes is shown as its first kExcerptBytes bytes (never cutting a
// UTF-8 sequence in two) followed by "... (N bytes)", so every message stays one short line.
// Control characters in it are escaped, so one line it stays.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace trainer {

inline constexpr size_t kExcerptBytes = 60;
inline constexpr size_t kExcerptLimit = 80;  // a value up to this long is shown whole

// The part of a value a message shows, and what follows it ("" or "... (N bytes)"); for
// helpers that quote or escape the shown part.
struct Excerpt {
  std::string_view shown;
  std::string tail;
};
Excerpt split_excerpt(std::string_view text);

// shown + tail, unquoted, with control characters (C0, DEL) written as \xNN: every value a
// message echoes comes from outside (a recipe, the environment, a file), and none may break a
// line or send a terminal escape sequence.
std::string excerpt(std::string_view text);

}  // namespace trainer
