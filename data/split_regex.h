// The regular expressions of Hugging Face pre-tokenizers (Split), matched natively.
//
// Only the subset that common tokenizer.json files use is accepted; anything else is a
// ConfigError naming the construct and its offset, never an approximation:
//   alternation |, groups ( ) (?: ), ASCII case-insensitive groups (?i: ), lookahead (?= )
//   and (?! ), greedy quantifiers ? * + {n} {n,} {n,m}, the dot (any code point but \n),
//   classes [...] and [^...] of literals, ranges and the escapes below,
//   escapes \r \n \t \f \v \xHH \uHHHH, an escaped punctuation character, \s \S, \p{L} \P{L},
//   \p{N} \P{N} (also spelled \p{Letter}, \p{Number}).
// Semantics are those of the reference, Hugging Face's JavaScript tokenizers (which rewrite
// the file's Oniguruma pattern for JavaScript's engine before matching): leftmost-first
// backtracking, code points (not bytes), \s = Unicode White_Space, \p{L}/\p{N} = the general
// categories (data/unicode_classes.h), (?i: ) folds ASCII letters only. A byte that is not
// valid UTF-8 is one code point of its own that belongs to no property and equals no literal.
// Not accepted: anchors, backreferences, lazy or possessive quantifiers, a repeated group that
// can match the empty string (its JavaScript semantics are subtle and no file needs them).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trainer {

class SplitRegex {
 public:
  // `where` names the pattern in errors (e.g. "tokenizer.json: pre_tokenizer.pretokenizers[0]
  // .pattern.Regex"). A pattern outside the subset is a ConfigError starting with `where`.
  SplitRegex(std::string_view pattern, const std::string& where);
  // A pattern that matches `literal` exactly (Split's {"String": ...}).
  static SplitRegex literal(std::string_view literal, const std::string& where);

  // Length in bytes of the match that starts exactly at `pos`, or -1 when there is none.
  // Throws an InputError if a match needs more than kMaxSteps backtracking steps.
  ptrdiff_t match_at(std::string_view text, size_t pos) const;

  // Appends to *pieces the text split as Split's "Isolated" behavior does: every non-empty
  // match is a piece, and so is every non-empty stretch between matches.
  void split_isolated(std::string_view text, std::vector<std::string_view>* pieces) const;

  static constexpr int64_t kMaxSteps = 1 << 22;

  struct CharSet {
    uint64_t ascii[2] = {0, 0};  // final membership of code points < 128 (negation applied)
    bool negated = false;
    bool letter = false, number = false, space = false;  // \p{L} \p{N} \s in the set
    bool not_letter = false, not_number = false, not_space = false;  // \P{L} \P{N} \S
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // literal code points >= 128
    bool contains(uint32_t cp) const {
      return cp < 128 ? (ascii[cp >> 6] >> (cp & 63)) & 1u : contains_above_ascii(cp);
    }
    bool contains_above_ascii(uint32_t cp) const;
  };
  struct Inst {
    enum Op : uint8_t { set, run, split, jump, look, look_not, match } op;
    int32_t a = 0, b = 0;  // set: set index; run: set index, min; split: x, y; jump: x;
    int32_t c = 0;         // look*: sub-program start; run: max (-1 = unbounded)
  };

 private:
  struct Frame {
    int32_t pc;
    // >= 0: a greedy run to shorten, its code point ends in positions from there on;
    // kAsciiRun: a run of one-byte code points that started at pos; else a plain alternative.
    int32_t run_base;
    int32_t run_k, run_min;
    size_t pos;
  };
  static constexpr int32_t kPlain = -1, kAsciiRun = -2;
  struct Scratch {
    std::vector<Frame> stack;
    std::vector<size_t> positions;
  };
  SplitRegex() = default;
  static void push(Scratch* s, int32_t pc, int32_t run_base, int32_t run_k, int32_t run_min,
                   size_t pos);
  ptrdiff_t match_with(std::string_view text, size_t pos, Scratch* scratch) const;
  bool run_program(std::string_view text, size_t pos, int32_t pc, Scratch* scratch,
                   size_t* end, int64_t* steps) const;

  void compute_first();
  bool may_start(int32_t pc, unsigned char byte) const {
    const unsigned bit = byte < 128 ? byte : 128;
    return (first_[static_cast<size_t>(pc)][bit >> 6] >> (bit & 63)) & 1u;
  }

  std::string source_;
  std::string literal_;  // non-empty: a String pattern, no program
  // Per instruction, the bytes a match from there can start with (bits 0..127: that ASCII
  // byte, bit 128: any byte >= 0x80); a split skips an alternative that cannot start here.
  std::vector<std::array<uint64_t, 3>> first_;
  std::vector<CharSet> sets_;
  std::vector<Inst> program_;
  friend class RegexCompiler;
};

// Unicode White_Space (what \s means in the reference's Split patterns).
bool is_unicode_white_space(uint32_t cp);

}  // namespace trainer
