// Unicode normalization forms NFC and NFKC, as the reference (JavaScript's
// String.prototype.normalize under node, whose tables unicode_normalization_table.cpp holds)
// computes them: full decomposition, canonical ordering of combining marks, canonical
// composition (Hangul included). Bytes that are not valid UTF-8 pass through unchanged and
// act as starters that nothing composes with.
#pragma once

#include <string>
#include <string_view>

namespace trainer {

enum class NormalForm { nfc, nfkc };

std::string unicode_normalize(std::string_view text, NormalForm form);

}  // namespace trainer
