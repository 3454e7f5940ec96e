// The Split-pattern matcher: leftmost-first alternation, greedy runs that give back, lookahead,
// ASCII case folding, Unicode properties, invalid UTF-8, and refusals of everything outside
// the subset (each naming the construct).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "data/split_regex.h"
#include "kernels/base/errors.h"

using namespace trainer;

namespace {

std::vector<std::string> split(const std::string& pattern, const std::string& text) {
  const SplitRegex re(pattern, "test");
  std::vector<std::string_view> pieces;
  re.split_isolated(text, &pieces);
  return {pieces.begin(), pieces.end()};
}

const char* kLlama3 =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

}  // namespace

TEST_CASE("split regex: the Llama 3 pattern on words, numbers, spaces and contractions") {
  using V = std::vector<std::string>;
  CHECK(split(kLlama3, "Hello world") == V{"Hello", " world"});
  CHECK(split(kLlama3, "1234567") == V{"123", "456", "7"});
  CHECK(split(kLlama3, "I'M here") == V{"I", "'M", " here"});
  CHECK(split(kLlama3, "a   b") == V{"a", "  ", " b"});  // \s+(?!\S) gives back one space
  CHECK(split(kLlama3, "x\n\n  y") == V{"x", "\n\n", " ", " y"});
  CHECK(split(kLlama3, "end  ") == V{"end", "  "});
  CHECK(split(kLlama3, "(ok)!\n") == V{"(ok", ")!\n"});
  CHECK(split(kLlama3, "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC") == V{"caf\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC"});
}

TEST_CASE("split regex: match_at, classes, ranges, folding and lookahead") {
  CHECK(SplitRegex("[a-c]+", "t").match_at("abcd", 0) == 3);
  CHECK(SplitRegex("[^a-c]", "t").match_at("abcd", 0) == -1);
  CHECK(SplitRegex("(?i:ab)", "t").match_at("aB", 0) == 2);
  CHECK(SplitRegex("ab", "t").match_at("aB", 0) == -1);
  CHECK(SplitRegex("a(?=b)", "t").match_at("ab", 0) == 1);
  CHECK(SplitRegex("a(?!b)", "t").match_at("ab", 0) == -1);
  CHECK(SplitRegex("(?:ab){2,3}", "t").match_at("abababab", 0) == 6);
  CHECK(SplitRegex("a{2,}", "t").match_at("aaaa", 0) == 4);
  CHECK(SplitRegex("a|ab", "t").match_at("ab", 0) == 1);  // leftmost-first, not longest
  CHECK(SplitRegex(".+", "t").match_at("ab\ncd", 0) == 2);
  CHECK(SplitRegex("\\.\\x41\\u00e9", "t").match_at(".A\xC3\xA9", 0) == 4);
  CHECK(SplitRegex("\\s", "t").match_at("\xC2\x85", 0) == 2);       // U+0085 is White_Space
  CHECK(SplitRegex("\\s", "t").match_at("\xEF\xBB\xBF", 0) == -1);  // U+FEFF is not
  CHECK(SplitRegex("\\P{L}", "t").match_at("\xFF", 0) == 1);        // a bad byte: no letter
  CHECK(SplitRegex("\\p{L}", "t").match_at("\xFF", 0) == -1);
  CHECK(SplitRegex::literal("--", "t").match_at("a--b", 1) == 2);
}

TEST_CASE("split regex: patterns outside the subset are refused naming the construct") {
  const char* refused[][2] = {
      {"^a", "an anchor"},
      {"a$", "an anchor"},
      {"\\d+", "the escape \\d"},
      {"\\p{Lu}", "the property \\p{Lu}"},
      {"a+?", "a lazy or possessive quantifier"},
      {"a++", "a lazy or possessive quantifier"},
      {"(?<=a)b", "a group kind other than"},
      {"(a*)*", "a repeated group that can match the empty string"},
      {"[[:alpha:]]", "a nested class"},
      {"(ab", "an unterminated group"},
      {"ab)", "unbalanced ')'"},
      {"a{3,1}", "m < n"},
      {"\\1", "the escape \\1"},
  };
  for (const auto& r : refused) {
    INFO(std::string(r[0]));
    CHECK_THROWS_WITH_AS(SplitRegex(r[0], "tokenizer.json: pre_tokenizer.pattern.Regex"),
                         doctest::Contains(r[1]), ConfigError);
    CHECK_THROWS_WITH_AS(SplitRegex(r[0], "tokenizer.json: pre_tokenizer.pattern.Regex"),
                         doctest::Contains("tokenizer.json: pre_tokenizer.pattern.Regex: the pattern"),
                         ConfigError);
  }
}

TEST_CASE("split regex: runaway backtracking is an error, not a hang") {
  const SplitRegex re("(?:a|aa)+b", "t");
  CHECK_THROWS_WITH_AS(re.match_at(std::string(60, 'a'), 0), doctest::Contains("backtracking steps"),
                       InputError);
}
