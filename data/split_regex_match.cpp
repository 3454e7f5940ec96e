// The interpreter of Split-pattern programs (see split_regex.h): backtracking in priority
// order, so the first `match` reached is the leftmost-first match a JavaScript engine finds.
#include <fmt/core.h>

#include "data/split_regex.h"
#include "data/unicode_classes.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace {

inline int decode_at(std::string_view text, size_t pos, uint32_t* cp) {
  const auto b = static_cast<unsigned char>(text[pos]);
  if (b < 0x80) {
    *cp = b;
    return 1;
  }
  return utf8_next(text.data() + pos, text.data() + text.size(), cp);
}

}  // namespace

// Fields stored one by one: building a Frame and copying it in stalls on store forwarding.
inline void SplitRegex::push(Scratch* s, int32_t pc, int32_t run_base, int32_t run_k,
                             int32_t run_min, size_t pos) {
  s->stack.emplace_back();
  Frame& f = s->stack.back();
  f.pc = pc;
  f.run_base = run_base;
  f.run_k = run_k;
  f.run_min = run_min;
  f.pos = pos;
}

bool SplitRegex::run_program(std::string_view text, size_t pos, int32_t pc, Scratch* s,
                             size_t* end, int64_t* steps_total) const {
  int64_t steps = *steps_total;  // kept in a register; written back before any return
  const size_t stack_base = s->stack.size(), positions_base = s->positions.size();
  const size_t n = text.size();
  while (true) {
    if (++steps > kMaxSteps)
      throw InputError(fmt::format(
          "the Split pattern \"{}\" needed more than {} backtracking steps at byte {} of a "
          "{}-byte piece of text", source_, kMaxSteps, pos, n));
    const Inst& in = program_[static_cast<size_t>(pc)];
    bool ok = true;
    switch (in.op) {
      case Inst::set: {
        uint32_t cp = 0;
        if (pos < n) {
          const int len = decode_at(text, pos, &cp);
          if (sets_[static_cast<size_t>(in.a)].contains(cp)) {
            pos += static_cast<size_t>(len);
            ++pc;
            break;
          }
        }
        ok = false;
        break;
      }
      case Inst::run: {
        const CharSet& set = sets_[static_cast<size_t>(in.a)];
        const size_t start = pos, base = s->positions.size();
        int32_t count = 0;
        bool ascii = true;  // while every code point is one byte, positions are start + k
        while (pos < n && (in.c < 0 || count < in.c)) {
          uint32_t cp = 0;
          const int len = decode_at(text, pos, &cp);
          if (!set.contains(cp)) break;
          if (len != 1 && ascii) {  // from here on, remember where each code point ends
            ascii = false;
            for (int32_t k = 0; k <= count; ++k) s->positions.push_back(start + static_cast<size_t>(k));
          }
          pos += static_cast<size_t>(len);
          ++count;
          if (!ascii) s->positions.push_back(pos);
        }
        if (count < in.b) {
          s->positions.resize(base);
          ok = false;
          break;
        }
        if (count > in.b) {
          push(s, pc + 1, ascii ? kAsciiRun : static_cast<int32_t>(base), count, in.b, start);
        } else {
          s->positions.resize(base);
        }
        ++pc;
        break;
      }
      case Inst::split:
        if (pos < n && !may_start(in.a, static_cast<unsigned char>(text[pos]))) {
          pc = in.b;  // the preferred branch cannot start with this byte
        } else if (pos < n && !may_start(in.b, static_cast<unsigned char>(text[pos]))) {
          pc = in.a;  // nothing to come back to
        } else {
          push(s, in.b, kPlain, 0, 0, pos);
          pc = in.a;
        }
        break;
      case Inst::jump: pc = in.a; break;
      case Inst::look:
      case Inst::look_not: {
        size_t sub_end = 0;
        const bool m = run_program(text, pos, in.c, s, &sub_end, &steps);
        if (m == (in.op == Inst::look)) {
          ++pc;
        } else {
          ok = false;
        }
        break;
      }
      case Inst::match:
        *end = pos;
        s->stack.resize(stack_base);
        s->positions.resize(positions_base);
        *steps_total = steps;
        return true;
    }
    if (ok) continue;
    if (s->stack.size() == stack_base) {
      s->positions.resize(positions_base);
      *steps_total = steps;
      return false;
    }
    Frame& f = s->stack.back();
    pc = f.pc;
    if (f.run_base == kPlain) {
      pos = f.pos;
      s->stack.pop_back();
      continue;
    }
    --f.run_k;  // give back one code point of the greedy run
    if (f.run_base == kAsciiRun) {
      pos = f.pos + static_cast<size_t>(f.run_k);
      if (f.run_k == f.run_min) s->stack.pop_back();
      continue;
    }
    const size_t at = static_cast<size_t>(f.run_base + f.run_k);
    pos = s->positions[at];
    if (f.run_k == f.run_min) {
      s->positions.resize(static_cast<size_t>(f.run_base));
      s->stack.pop_back();
    } else {
      s->positions.resize(at + 1);
    }
  }
}

ptrdiff_t SplitRegex::match_with(std::string_view text, size_t pos, Scratch* scratch) const {
  if (!literal_.empty())
    return text.compare(pos, literal_.size(), literal_) == 0 ? static_cast<ptrdiff_t>(literal_.size()) : -1;
  size_t end = 0;
  int64_t steps = 0;
  if (!run_program(text, pos, 0, scratch, &end, &steps)) return -1;
  return static_cast<ptrdiff_t>(end - pos);
}

ptrdiff_t SplitRegex::match_at(std::string_view text, size_t pos) const {
  Scratch scratch;
  return match_with(text, pos, &scratch);
}

void SplitRegex::split_isolated(std::string_view text, std::vector<std::string_view>* pieces) const {
  Scratch scratch;
  size_t pos = 0, gap = 0;
  while (pos < text.size()) {
    const ptrdiff_t len = match_with(text, pos, &scratch);
    if (len > 0) {  // an empty match splits nothing (the reference drops it)
      if (gap < pos) pieces->push_back(text.substr(gap, pos - gap));
      pieces->push_back(text.substr(pos, static_cast<size_t>(len)));
      pos += static_cast<size_t>(len);
      gap = pos;
      continue;
    }
    uint32_t cp = 0;
    pos += static_cast<size_t>(decode_at(text, pos, &cp));
  }
  if (gap < text.size()) pieces->push_back(text.substr(gap));
}

}  // namespace trainer
