// NFC / NFKC (see unicode_normalize.h). Text is processed in runs that start at a starter;
// an ASCII byte followed by ASCII is its own run and is copied as it is.
#include "data/unicode_normalize.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "data/unicode_classes.h"
#include "data/unicode_normalize_tables.h"

namespace trainer {
namespace {

constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;
// A byte that is not valid UTF-8, carried through the buffer: above every code point.
constexpr uint32_t kRawByte = 0x80000000u;

uint32_t combining_rank(uint32_t cp) {
  if (cp < 0x300 || cp >= kRawByte) return 0;
  const CombiningRange* end = kCombiningRanges + kCombiningRangeCount;
  const CombiningRange* r = std::upper_bound(
      kCombiningRanges, end, cp, [](uint32_t c, const CombiningRange& x) { return c < x.first; });
  if (r == kCombiningRanges) return 0;
  --r;
  return cp <= r->last ? r->rank : 0;
}

void decompose(uint32_t cp, NormalForm form, std::vector<uint32_t>* out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out->push_back(kLBase + s / kNCount);
    out->push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out->push_back(kTBase + s % kTCount);
    return;
  }
  if (cp >= 0x80 && cp < kRawByte) {
    const Decomposition* end = kDecompositions + kDecompositionCount;
    const Decomposition* d = std::lower_bound(
        kDecompositions, end, cp, [](const Decomposition& x, uint32_t c) { return x.cp < c; });
    if (d != end && d->cp == cp) {
      uint32_t off = d->canonical_offset, len = d->canonical_length;
      if (form == NormalForm::nfkc && d->compat_length > 0) off = d->compat_offset, len = d->compat_length;
      if (len > 0) {
        out->insert(out->end(), kDecompositionPool + off, kDecompositionPool + off + len);
        return;
      }
    }
  }
  out->push_back(cp);
}

// The primary composite of (a, b), or 0.
uint32_t compose(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  const Composition* end = kCompositions + kCompositionCount;
  const Composition* c = std::lower_bound(kCompositions, end, std::make_pair(a, b),
                                          [](const Composition& x, const std::pair<uint32_t, uint32_t>& k) {
                                            return x.first != k.first ? x.first < k.first : x.second < k.second;
                                          });
  return c != end && c->first == a && c->second == b ? c->composite : 0;
}

void append_codepoint(uint32_t cp, std::string* out) {
  if (cp >= kRawByte) out->push_back(static_cast<char>(cp & 0xFF));
  else append_utf8(cp, out);
}

// Canonical ordering then composition of buf, appended to out as UTF-8.
void order_and_compose(std::vector<uint32_t>* buf, std::string* out) {
  std::vector<uint32_t>& b = *buf;
  for (size_t i = 0; i < b.size();) {  // stable sort of each run of non-starters
    if (combining_rank(b[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < b.size() && combining_rank(b[j]) != 0) ++j;
    std::stable_sort(b.begin() + static_cast<std::ptrdiff_t>(i), b.begin() + static_cast<std::ptrdiff_t>(j),
                     [](uint32_t x, uint32_t y) { return combining_rank(x) < combining_rank(y); });
    i = j;
  }
  size_t starter = SIZE_MAX, kept = 0;
  uint32_t last_rank = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const uint32_t cp = b[i], rank = combining_rank(cp);
    if (starter != SIZE_MAX) {
      const bool blocked = kept > starter + 1 && (last_rank == 0 || last_rank >= rank);
      if (!blocked) {
        if (const uint32_t c = compose(b[starter], cp)) {
          b[starter] = c;
          continue;
        }
      }
    }
    if (rank == 0) {
      starter = kept;
      last_rank = 0;
    } else {
      last_rank = rank;
    }
    b[kept++] = cp;
  }
  b.resize(kept);
  for (uint32_t cp : b) append_codepoint(cp, out);
  b.clear();
}

}  // namespace

std::string unicode_normalize(std::string_view text, NormalForm form) {
  std::string out;
  out.reserve(text.size());
  std::vector<uint32_t> buf;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    // ASCII followed by ASCII (or the end) is final: nothing composes with it or reorders.
    if (c < 0x80 && (i + 1 == text.size() || static_cast<unsigned char>(text[i + 1]) < 0x80)) {
      if (!buf.empty()) order_and_compose(&buf, &out);
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const int len = utf8_next(text.data() + i, text.data() + text.size(), &cp);
    if (cp == kInvalidCodepoint) cp = kRawByte | c;
    decompose(cp, form, &buf);
    i += static_cast<size_t>(len);
  }
  if (!buf.empty()) order_and_compose(&buf, &out);
  return out;
}

}  // namespace trainer
