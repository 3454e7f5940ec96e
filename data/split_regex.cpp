// Split-pattern regular expressions (see split_regex.h): a recursive-descent compiler from
// the pattern to a small backtracking program, and its interpreter. Greedy runs of one
// character class (\p{L}+, \s*, \p{N}{1,3}) are one instruction that remembers where each
// code point began, so backtracking into them costs no rescan.
#include "data/split_regex.h"

#include <fmt/core.h>

#include <memory>

#include "data/unicode_classes.h"
#include "kernels/base/errors.h"

namespace trainer {

bool is_unicode_white_space(uint32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

bool SplitRegex::CharSet::contains_above_ascii(uint32_t cp) const {
  bool in = false;
  if (cp != kInvalidCodepoint) {
    const CharClass cls = char_class(cp);
    const bool ws = is_unicode_white_space(cp);
    in = (letter && cls == CharClass::letter) || (number && cls == CharClass::number) ||
         (space && ws) || (not_letter && cls != CharClass::letter) ||
         (not_number && cls != CharClass::number) || (not_space && !ws);
    for (size_t i = 0; !in && i < ranges.size(); ++i)
      in = cp >= ranges[i].first && cp <= ranges[i].second;
  } else {
    in = not_letter || not_number || not_space;
  }
  return in != negated;
}

namespace {

using CharSet = SplitRegex::CharSet;
using Inst = SplitRegex::Inst;

struct Node {
  enum Kind { set, seq, alt, repeat, look, look_not } kind = seq;
  int32_t set_index = -1;
  int32_t min = 0, max = 0;  // repeat; max -1 = unbounded
  std::vector<Node> kids;
};

bool nullable(const Node& n) {
  switch (n.kind) {
    case Node::set: return false;
    case Node::look:
    case Node::look_not: return true;
    case Node::repeat: return n.min == 0 || nullable(n.kids[0]);
    case Node::seq:
      for (const Node& k : n.kids)
        if (!nullable(k)) return false;
      return true;
    case Node::alt:
      for (const Node& k : n.kids)
        if (nullable(k)) return true;
      return false;
  }
  return true;
}

void set_ascii(CharSet* s, uint32_t cp) { s->ascii[cp >> 6] |= uint64_t{1} << (cp & 63); }

}  // namespace

class RegexCompiler {
 public:
  RegexCompiler(std::string_view pattern, const std::string& where, SplitRegex* out)
      : p_(pattern), where_(where), out_(out) {}

  void compile() {
    Node root = alternation(0);
    if (pos_ < p_.size()) fail("unbalanced ')'");
    emit(root);
    out_->program_.push_back({Inst::match});
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ConfigError(fmt::format(
        "{}: the pattern \"{}\" uses {} at offset {}, which trainer's regex matcher does not "
        "implement (it accepts | ( ) (?: ) (?i: ) (?= ) (?! ), greedy ? * + {{n,m}}, . [...] "
        "[^...], \\s \\S \\p{{L}} \\P{{L}} \\p{{N}} \\P{{N}}, \\r \\n \\t \\f \\v \\xHH \\uHHHH "
        "and escaped punctuation)", where_, p_, what, pos_));
  }

  bool at_end() const { return pos_ >= p_.size(); }
  char peek() const { return at_end() ? '\0' : p_[pos_]; }

  uint32_t next_codepoint() {
    uint32_t cp = 0;
    const int len = utf8_next(p_.data() + pos_, p_.data() + p_.size(), &cp);
    if (cp == kInvalidCodepoint) fail("a byte that is not valid UTF-8");
    pos_ += static_cast<size_t>(len);
    return cp;
  }

  int32_t add_set(CharSet s) {
    out_->sets_.push_back(std::move(s));
    return static_cast<int32_t>(out_->sets_.size() - 1);
  }

  // Adds one literal code point (both ASCII cases when folding).
  void add_literal(CharSet* s, uint32_t cp) const {
    if (cp >= 128) {
      s->ranges.emplace_back(cp, cp);
      return;
    }
    set_ascii(s, cp);
    if (fold_ && cp >= 'a' && cp <= 'z') set_ascii(s, cp - 32);
    if (fold_ && cp >= 'A' && cp <= 'Z') set_ascii(s, cp + 32);
  }

  void add_range(CharSet* s, uint32_t lo, uint32_t hi) const {
    if (lo > hi) fail("a class range whose start is after its end");
    for (uint32_t c = lo; c <= hi && c < 128; ++c) add_literal(s, c);
    if (hi >= 128) s->ranges.emplace_back(lo < 128 ? 128 : lo, hi);
  }

  uint32_t hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char h = peek();
      int d = -1;
      if (h >= '0' && h <= '9') d = h - '0';
      else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
      if (d < 0) fail("a malformed hex escape");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    return v;
  }

  // After a backslash: adds what the escape stands for to *s. Returns false for an escape
  // that is one literal code point, stored in *literal instead.
  bool escape(CharSet* s, uint32_t* literal) {
    if (at_end()) fail("a trailing backslash");
    const size_t start = pos_;
    const char e = p_[pos_++];
    switch (e) {
      case 'r': *literal = '\r'; return false;
      case 'n': *literal = '\n'; return false;
      case 't': *literal = '\t'; return false;
      case 'f': *literal = '\f'; return false;
      case 'v': *literal = '\v'; return false;
      case 'x': *literal = hex(2); return false;
      case 'u': *literal = hex(4); return false;
      case 's': s->space = true; return true;
      case 'S': s->not_space = true; return true;
      case 'p':
      case 'P': {
        if (peek() != '{') fail("\\p without {...}");
        const size_t close = p_.find('}', pos_);
        if (close == std::string_view::npos) fail("an unterminated \\p{...}");
        const std::string_view name = p_.substr(pos_ + 1, close - pos_ - 1);
        const bool neg = e == 'P';
        if (name == "L" || name == "Letter") {
          (neg ? s->not_letter : s->letter) = true;
        } else if (name == "N" || name == "Number") {
          (neg ? s->not_number : s->number) = true;
        } else {
          pos_ = start - 1;
          fail(fmt::format("the property \\{}{{{}}}", e, name));
        }
        pos_ = close + 1;
        return true;
      }
      default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
          pos_ = start - 1;
          fail(fmt::format("the escape \\{}", e));
        }
        --pos_;
        *literal = next_codepoint();
        return false;
    }
  }

  Node set_node(CharSet s) {
    for (uint32_t c = 0; c < 128; ++c) {  // fold the properties into the ASCII bitmap
      const CharClass cls = char_class(c);
      const bool ws = is_unicode_white_space(c);
      const bool in = ((s.ascii[c >> 6] >> (c & 63)) & 1u) ||
                      (s.letter && cls == CharClass::letter) ||
                      (s.number && cls == CharClass::number) || (s.space && ws) ||
                      (s.not_letter && cls != CharClass::letter) ||
                      (s.not_number && cls != CharClass::number) || (s.not_space && !ws);
      s.ascii[c >> 6] &= ~(uint64_t{1} << (c & 63));
      if (in != s.negated) set_ascii(&s, c);
    }
    Node n;
    n.kind = Node::set;
    n.set_index = add_set(std::move(s));
    return n;
  }

  Node bracket_class() {
    CharSet s;
    if (peek() == '^') {
      s.negated = true;
      ++pos_;
    }
    bool first = true;
    while (true) {
      if (at_end()) fail("an unterminated class [...]");
      const char c = peek();
      if (c == ']' && !first) {
        ++pos_;
        break;
      }
      if (c == '[') fail("a nested class or set operation inside [...]");
      if (c == ']') fail("an empty class []");
      first = false;
      uint32_t lo = 0;
      if (c == '\\') {
        ++pos_;
        if (escape(&s, &lo)) continue;
      } else {
        lo = next_codepoint();
      }
      if (peek() == '-' && pos_ + 1 < p_.size() && p_[pos_ + 1] != ']') {
        ++pos_;
        uint32_t hi = 0;
        if (peek() == '\\') {
          ++pos_;
          if (escape(&s, &hi)) fail("a class range that ends in a property");
        } else {
          hi = next_codepoint();
        }
        add_range(&s, lo, hi);
      } else {
        add_literal(&s, lo);
      }
    }
    return set_node(std::move(s));
  }

  Node atom() {
    const char c = peek();
    if (c == '(') {
      ++pos_;
      Node n;
      const bool saved_fold = fold_;
      if (p_.substr(pos_, 2) == "?:") {
        pos_ += 2;
      } else if (p_.substr(pos_, 3) == "?i:") {
        pos_ += 3;
        fold_ = true;
      } else if (p_.substr(pos_, 2) == "?=" || p_.substr(pos_, 2) == "?!") {
        n.kind = p_[pos_ + 1] == '=' ? Node::look : Node::look_not;
        pos_ += 2;
      } else if (peek() == '?') {
        fail("a group kind other than (?: (?i: (?= (?!");
      }
      Node inner = alternation(depth_ + 1);
      fold_ = saved_fold;
      if (peek() != ')') fail("an unterminated group");
      ++pos_;
      if (n.kind == Node::seq) return inner;
      n.kids.push_back(std::move(inner));
      return n;
    }
    if (c == '[') {
      ++pos_;
      return bracket_class();
    }
    if (c == '.') {
      ++pos_;
      CharSet s;
      s.negated = true;
      set_ascii(&s, '\n');
      return set_node(std::move(s));
    }
    if (c == '^' || c == '$') fail("an anchor");
    if (c == '*' || c == '+' || c == '?' || c == '{' || c == '}' || c == ']')
      fail(fmt::format("a misplaced '{}'", c));
    CharSet s;
    uint32_t literal = 0;
    if (c == '\\') {
      ++pos_;
      if (escape(&s, &literal)) return set_node(std::move(s));
    } else {
      literal = next_codepoint();
    }
    add_literal(&s, literal);
    return set_node(std::move(s));
  }

  int32_t number() {
    if (!(peek() >= '0' && peek() <= '9')) fail("a malformed {n,m} quantifier");
    int32_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (p_[pos_++] - '0');
      if (v > 1000) fail("a repeat count above 1000");
    }
    return v;
  }

  Node quantified() {
    Node a = atom();
    while (!at_end()) {
      int32_t min = 0, max = 0;
      const char q = peek();
      if (q == '*') {
        min = 0, max = -1;
      } else if (q == '+') {
        min = 1, max = -1;
      } else if (q == '?') {
        min = 0, max = 1;
      } else if (q == '{') {
        ++pos_;
        min = max = number();
        if (peek() == ',') {
          ++pos_;
          max = peek() == '}' ? -1 : number();
        }
        if (peek() != '}') fail("a malformed {n,m} quantifier");
        if (max >= 0 && max < min) fail("a {n,m} quantifier with m < n");
      } else {
        break;
      }
      ++pos_;
      if (peek() == '?' || peek() == '+') fail("a lazy or possessive quantifier");
      if (a.kind == Node::look || a.kind == Node::look_not) fail("a quantified lookahead");
      if (max != 1 && nullable(a)) fail("a repeated group that can match the empty string");
      Node r;
      r.kind = Node::repeat;
      r.min = min, r.max = max;
      r.kids.push_back(std::move(a));
      a = std::move(r);
    }
    return a;
  }

  Node alternation(int depth) {
    if (depth > 64) fail("groups nested deeper than 64");
    const int saved = depth_;
    depth_ = depth;
    Node alt;
    alt.kind = Node::alt;
    while (true) {
      Node seq;
      while (!at_end() && peek() != '|' && peek() != ')') seq.kids.push_back(quantified());
      alt.kids.push_back(std::move(seq));
      if (peek() != '|') break;
      ++pos_;
    }
    depth_ = saved;
    if (alt.kids.size() == 1) return std::move(alt.kids[0]);
    return alt;
  }

  int32_t here() const { return static_cast<int32_t>(out_->program_.size()); }
  std::vector<Inst>& prog() { return out_->program_; }

  void emit(const Node& n) {
    switch (n.kind) {
      case Node::set: prog().push_back({Inst::set, n.set_index}); return;
      case Node::seq:
        for (const Node& k : n.kids) emit(k);
        return;
      case Node::alt: {
        std::vector<int32_t> jumps;
        for (size_t i = 0; i < n.kids.size(); ++i) {
          int32_t split = -1;
          if (i + 1 < n.kids.size()) {
            split = here();
            prog().push_back({Inst::split, split + 1, 0});
          }
          emit(n.kids[i]);
          jumps.push_back(here());
          prog().push_back({Inst::jump, 0});
          if (split >= 0) prog()[static_cast<size_t>(split)].b = here();
        }
        for (int32_t j : jumps) prog()[static_cast<size_t>(j)].a = here();
        return;
      }
      case Node::look:
      case Node::look_not: {
        const int32_t at = here();
        prog().push_back({n.kind == Node::look ? Inst::look : Inst::look_not, 0, 0, at + 2});
        prog().push_back({Inst::jump, 0});
        emit(n.kids[0]);
        prog().push_back({Inst::match});
        prog()[static_cast<size_t>(at + 1)].a = here();
        return;
      }
      case Node::repeat: {
        const Node& k = n.kids[0];
        if (k.kind == Node::set) {
          prog().push_back({Inst::run, k.set_index, n.min, n.max});
          return;
        }
        for (int32_t i = 0; i < n.min; ++i) emit(k);
        if (n.max < 0) {  // loop: split(body, out); body; jump loop
          const int32_t loop = here();
          prog().push_back({Inst::split, loop + 1, 0});
          emit(k);
          prog().push_back({Inst::jump, loop});
          prog()[static_cast<size_t>(loop)].b = here();
          return;
        }
        std::vector<int32_t> splits;  // nested optionals: (k(k(k)?)?)?
        for (int32_t i = n.min; i < n.max; ++i) {
          splits.push_back(here());
          prog().push_back({Inst::split, here() + 1, 0});
          emit(k);
        }
        for (int32_t s : splits) prog()[static_cast<size_t>(s)].b = here();
        return;
      }
    }
  }

  std::string_view p_;
  const std::string& where_;
  SplitRegex* out_;
  size_t pos_ = 0;
  bool fold_ = false;
  int depth_ = 0;
};

SplitRegex::SplitRegex(std::string_view pattern, const std::string& where) : source_(pattern) {
  RegexCompiler(source_, where, this).compile();
  compute_first();
}

void SplitRegex::compute_first() {
  using Bits = std::array<uint64_t, 3>;
  const Bits all{~0ull, ~0ull, 1ull};
  auto of_set = [&](int32_t index) {
    const CharSet& c = sets_[static_cast<size_t>(index)];
    const bool wide = c.negated || c.letter || c.number || c.space || c.not_letter ||
                      c.not_number || c.not_space || !c.ranges.empty();
    return Bits{c.ascii[0], c.ascii[1], wide ? 1ull : 0ull};
  };
  auto unite = [](const Bits& a, const Bits& b) { return Bits{a[0] | b[0], a[1] | b[1], a[2] | b[2]}; };
  first_.assign(program_.size(), Bits{0, 0, 0});
  for (bool changed = true; changed;) {  // a fixpoint: loops refer back to earlier instructions
    changed = false;
    for (size_t pc = program_.size(); pc-- > 0;) {
      const Inst& in = program_[pc];
      Bits f{};
      switch (in.op) {
        case Inst::set: f = of_set(in.a); break;
        case Inst::run: f = in.b == 0 ? unite(of_set(in.a), first_[pc + 1]) : of_set(in.a); break;
        case Inst::split: f = unite(first_[static_cast<size_t>(in.a)], first_[static_cast<size_t>(in.b)]); break;
        case Inst::jump: f = first_[static_cast<size_t>(in.a)]; break;
        case Inst::look:
        case Inst::look_not:
        case Inst::match: f = all; break;  // may match without consuming: never skip
      }
      if (f != first_[pc]) {
        first_[pc] = f;
        changed = true;
      }
    }
  }
}

SplitRegex SplitRegex::literal(std::string_view literal, const std::string& where) {
  if (literal.empty()) throw ConfigError(fmt::format("{}: an empty String pattern", where));
  SplitRegex r;
  r.source_ = std::string(literal);
  r.literal_ = r.source_;  // compared byte for byte: equal UTF-8 is equal text
  return r;
}

}  // namespace trainer
