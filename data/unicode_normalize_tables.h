// Tables behind NFC / NFKC (unicode_normalize.h), generated from node's own normalize() by
// scripts/reference/gen_unicode_normalization.js into unicode_normalization_table.cpp.
// All arrays are sorted by their first field(s); Hangul syllables are not in them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace trainer {

struct Decomposition {
  uint32_t cp;
  uint32_t canonical_offset, canonical_length;  // full NFD of cp in kDecompositionPool
  uint32_t compat_offset, compat_length;        // full NFKD (length 0: same as canonical)
};
struct CombiningRange {
  uint32_t first, last;
  uint32_t rank;  // orders like the canonical combining class; 0 (starters) is not listed
};
struct Composition {
  uint32_t first, second, composite;
};

extern const Decomposition kDecompositions[];
extern const size_t kDecompositionCount;
extern const uint32_t kDecompositionPool[];
extern const CombiningRange kCombiningRanges[];
extern const size_t kCombiningRangeCount;
extern const Composition kCompositions[];
extern const size_t kCompositionCount;

}  // namespace trainer
