// Pieces of the tokenizers: code point classes, UTF-8 decoding, GPT-2 pre-tokenisation, BPE
// merging against a literal transcription of the reference loop, the byte tokenizer, and the
// errors for malformed tokenizer files.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "data/bpe.h"
#include "data/byte_tokenizer.h"
#include "data/gpt2_pretokenize.h"
#include "data/gpt2_vocab.h"
#include "data/json_string_map.h"
#include "data/shuffle.h"
#include "data/unicode_classes.h"
#include "kernels/base/errors.h"
#include "tests/data/data_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("unicode classes: letters, numbers, JavaScript whitespace") {
  CHECK(char_class('a') == CharClass::letter);
  CHECK(char_class('7') == CharClass::number);
  CHECK(char_class(' ') == CharClass::space);
  CHECK(char_class('\'') == CharClass::other);
  CHECK(char_class(0x00E9) == CharClass::letter);   // é
  CHECK(char_class(0x65E5) == CharClass::letter);   // 日
  CHECK(char_class(0x0663) == CharClass::number);   // Arabic-Indic three
  CHECK(char_class(0x216B) == CharClass::number);   // Roman numeral twelve (Nl)
  CHECK(char_class(0x00BD) == CharClass::number);   // ½ (No)
  CHECK(char_class(0x00A0) == CharClass::space);
  CHECK(char_class(0x3000) == CharClass::space);
  CHECK(char_class(0xFEFF) == CharClass::space);    // JavaScript \s includes the BOM
  CHECK(char_class(0x0085) == CharClass::other);    // ... but not NEL
  CHECK(char_class(0x001C) == CharClass::other);
  CHECK(char_class(0x0301) == CharClass::other);    // combining accent (Mn)
  CHECK(char_class(0x1F600) == CharClass::other);   // emoji
  CHECK(char_class(0x10FFFF) == CharClass::other);
  for (size_t i = 1; i < kCodepointRangeCount; ++i)
    CHECK(kCodepointRanges[i - 1].last < kCodepointRanges[i].first);
}

TEST_CASE("utf8_next: valid sequences and every kind of invalid byte") {
  uint32_t cp = 0;
  auto next = [&](const std::string& s) { return utf8_next(s.data(), s.data() + s.size(), &cp); };
  CHECK(next("A") == 1);
  CHECK(cp == 'A');
  CHECK(next("\xC3\xA9") == 2);
  CHECK(cp == 0xE9);
  CHECK(next("\xE6\x97\xA5") == 3);
  CHECK(cp == 0x65E5);
  CHECK(next("\xF0\x9F\x98\x80") == 4);
  CHECK(cp == 0x1F600);
  for (const std::string bad : {"\x80", "\xC0\xAF", "\xE0\x80\xAF", "\xED\xA0\x80",
                                "\xF4\x90\x80\x80", "\xE6\x97", "\xFF", "\xC3("}) {
    CHECK(next(bad) == 1);
    CHECK(cp == kInvalidCodepoint);
  }
}

namespace {

std::vector<std::string> pieces_of(const std::string& text) {
  std::vector<std::string_view> views;
  gpt2_pretokenize(text, &views);
  return {views.begin(), views.end()};
}

using Pieces = std::vector<std::string>;

}  // namespace

TEST_CASE("gpt2 pre-tokenisation follows the pattern's alternatives in order") {
  CHECK(pieces_of("Hello world") == Pieces{"Hello", " world"});
  CHECK(pieces_of("a   b") == Pieces{"a", "  ", " b"});           // \s+(?!\S) leaves one space
  CHECK(pieces_of("  \nHello") == Pieces{"  ", "\n", "Hello"});   // then \s+ takes the newline
  CHECK(pieces_of("x  ") == Pieces{"x", "  "});                   // trailing run stays whole
  CHECK(pieces_of("I'm") == Pieces{"I", "'m"});
  CHECK(pieces_of("I'M") == Pieces{"I", "'", "M"});               // contractions are lower case
  CHECK(pieces_of("we'll've") == Pieces{"we", "'ll", "'ve"});
  CHECK(pieces_of(" 's") == Pieces{" '", "s"});
  CHECK(pieces_of("!!'s") == Pieces{"!!'", "s"});
  CHECK(pieces_of("abc123 456") == Pieces{"abc", "123", " 456"});
  CHECK(pieces_of("\tx") == Pieces{"\t", "x"});                   // only ' ' joins a word
  CHECK(pieces_of("") == Pieces{});
  CHECK(pieces_of("\xFF\xFEz") == Pieces{"\xFF\xFE", "z"});       // invalid bytes are "other"
  CHECK(pieces_of(" \xC3\xA9t\xC3\xA9") == Pieces{" \xC3\xA9t\xC3\xA9"});
}

namespace {

// encoder.py's bpe(), transcribed literally: find the lowest-ranked adjacent pair, merge all
// its occurrences left to right, repeat.
std::vector<int32_t> reference_bpe(const MergeTable& merges, std::vector<int32_t> word) {
  while (word.size() > 1) {
    const MergeRule* best = nullptr;
    int32_t first = 0, second = 0;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const MergeRule* r = merges.find(word[i], word[i + 1]);
      if (r && (!best || r->rank < best->rank)) best = r, first = word[i], second = word[i + 1];
    }
    if (!best) break;
    std::vector<int32_t> merged;
    for (size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
        merged.push_back(best->merged);
        i += 2;
      } else {
        merged.push_back(word[i++]);
      }
    }
    word = merged;
  }
  return word;
}

}  // namespace

TEST_CASE("bpe_merge equals the reference loop on GPT-2's merges") {
  const Gpt2Vocab vocab = load_gpt2_vocab(tokenizer_dir());
  SplitMix64 rng(11);
  BpeScratch scratch;
  static constexpr char kChars[] = "aeiourstlnTh  ,.'0123456789-";
  for (int i = 0; i < 2000; ++i) {
    std::vector<int32_t> word;
    const size_t n = 1 + rng.below(i < 1900 ? 12 : 200);
    for (size_t j = 0; j < n; ++j) {
      const auto byte = static_cast<unsigned char>(
          rng.below(4) == 0 ? rng.below(256) : static_cast<unsigned char>(kChars[rng.below(sizeof kChars - 1)]));
      word.push_back(vocab.byte_token[byte]);
    }
    std::vector<int32_t> fast = word;
    bpe_merge(vocab.merges, &fast, &scratch);
    CHECK(fast == reference_bpe(vocab.merges, word));
  }
}

TEST_CASE("bpe_merge equals the reference loop on merge tables with inconsistent ranks") {
  // Symbols 0..3 are a, b, c, x; rules made so that a pair created by a merge outranks the
  // merge that created it, where one-merge-at-a-time greedy BPE would differ.
  MergeTable m;
  m.add(0, 1, {5, 10});   // a b   -> ab
  m.add(10, 0, {3, 11});  // ab a  -> aba
  m.add(10, 10, {4, 12}); // ab ab -> abab
  m.add(0, 0, {1, 13});   // a a   -> aa
  m.add(13, 0, {0, 14});  // aa a  -> aaa
  m.add(3, 10, {2, 15});  // x ab  -> xab
  SplitMix64 rng(3);
  BpeScratch scratch;
  for (int i = 0; i < 3000; ++i) {
    std::vector<int32_t> word(1 + rng.below(10));
    for (int32_t& s : word) s = static_cast<int32_t>(rng.below(4));
    std::vector<int32_t> fast = word;
    bpe_merge(m, &fast, &scratch);
    CHECK(fast == reference_bpe(m, word));
  }
}

TEST_CASE("byte tokenizer: bytes in, bytes out, end-of-text 256") {
  const ByteTokenizer tok;
  CHECK(tok.vocab_size() == 257);
  CHECK(tok.eot() == 256);
  CHECK(tok.encode("Hi\xFF") == std::vector<int32_t>{72, 105, 255});
  CHECK(tok.decode({72, 105, 256}) == "Hi<|endoftext|>");
  SplitMix64 rng(5);
  std::string s(500, '\0');
  for (char& c : s) c = static_cast<char>(rng.below(256));
  CHECK(tok.decode(tok.encode(s)) == s);
  CHECK_THROWS_WITH_AS(tok.decode({257}), doctest::Contains("257"), InputError);
  CHECK(make_tokenizer(TokenizerKind::byte, "")->vocab_size() == 257);
}

TEST_CASE("tokenizer names: parse, and unknown names list the valid ones") {
  CHECK(parse_tokenizer_kind("gpt2", "x") == TokenizerKind::gpt2);
  CHECK(parse_tokenizer_kind("byte", "x") == TokenizerKind::byte);
  CHECK_THROWS_WITH_AS(parse_tokenizer_kind("gpt3", "recipe.yaml:4:3: data.tokenizer"),
                       doctest::Contains("recipe.yaml:4:3: data.tokenizer: unknown tokenizer "
                                         "'gpt3' (valid: gpt2, byte)"),
                       ConfigError);
}

TEST_CASE("json int map: escapes, surrogate pairs, and errors with line and column") {
  const auto m = parse_json_int_map(R"({"a": 1, "\u0120t": 2, "\ud83d\ude00": 3, "q\"\\": 40})", "f");
  REQUIRE(m.size() == 4);
  CHECK(m[1].first == "\xC4\xA0t");
  CHECK(m[2].first == "\xF0\x9F\x98\x80");
  CHECK(m[3].first == "q\"\\");
  CHECK(m[3].second == 40);
  CHECK_THROWS_WITH_AS(parse_json_int_map("{\"a\": 1,\n \"b\": x}", "enc.json"),
                       doctest::Contains("enc.json:2:7"), InputError);
  CHECK_THROWS_AS(parse_json_int_map("{\"a\": 1.5}", "f"), InputError);
  CHECK_THROWS_AS(parse_json_int_map("{\"\\ud800\": 1}", "f"), InputError);
  CHECK_THROWS_AS(parse_json_int_map("{\"a\": 1} x", "f"), InputError);
}

namespace {

// A copy of the real tokenizer files with one of them replaced.
std::string broken_tokenizer_dir(const std::string& name, const std::string& file,
                                 const std::string& text) {
  const std::string dir = scratch_dir(name);
  std::filesystem::copy_file(tokenizer_dir() + "/encoder.json", dir + "/encoder.json");
  std::filesystem::copy_file(tokenizer_dir() + "/vocab.bpe", dir + "/vocab.bpe");
  write_text_file(dir + "/" + file, text);
  return dir;
}

}  // namespace

TEST_CASE("gpt2 vocab: missing or malformed files are InputErrors naming the file") {
  load_gpt2();  // fails clearly when the real files are absent
  const std::string missing = scratch_dir("tok_missing");
  CHECK_THROWS_WITH_AS(make_tokenizer(TokenizerKind::gpt2, missing),
                       doctest::Contains((missing + "/encoder.json").c_str()), InputError);
  std::string merges = read_text_file(tokenizer_dir() + "/vocab.bpe");
  std::string dir = broken_tokenizer_dir("tok_bad_merge", "vocab.bpe",
                                         merges.substr(0, merges.find('\n', 20) + 1) + "zzqq ww\n");
  CHECK_THROWS_WITH_AS(load_gpt2_vocab(dir), doctest::Contains("vocab.bpe:"), InputError);
  dir = broken_tokenizer_dir("tok_bad_version", "vocab.bpe", "\xC4\xA0 t\n");
  CHECK_THROWS_WITH_AS(load_gpt2_vocab(dir), doctest::Contains("vocab.bpe:1"), InputError);
  dir = broken_tokenizer_dir("tok_bad_json", "encoder.json", "{\"a\": 0,}");
  CHECK_THROWS_WITH_AS(load_gpt2_vocab(dir), doctest::Contains("encoder.json:1:"), InputError);
  dir = broken_tokenizer_dir("tok_sparse", "encoder.json", "{\"a\": 0, \"b\": 5}");
  CHECK_THROWS_WITH_AS(load_gpt2_vocab(dir), doctest::Contains("encoder.json"), InputError);
}

TEST_CASE("gpt2 vocab: a pair merged twice is refused naming the file, both lines and the pair") {
  const std::string merges = read_text_file(tokenizer_dir() + "/vocab.bpe");
  const size_t second_line = merges.find('\n') + 1;
  const std::string first_merge = merges.substr(second_line, merges.find('\n', second_line) - second_line);
  struct Row {
    const char* name;
    std::string text;
    std::string says;
  };
  const Row rows[] = {
      {"right after", merges.substr(0, second_line) + first_merge + "\n" + merges.substr(second_line),
       "vocab.bpe:3: the merge '" + first_merge + "' repeats the one on line 2; each pair may be merged once"},
      {"at the end", merges + first_merge + "\n",
       "vocab.bpe:50002: the merge '" + first_merge + "' repeats the one on line 2"},
  };
  for (const Row& row : rows) {
    CAPTURE(row.name);
    const std::string dir = broken_tokenizer_dir(std::string("tok_dup_") + (row.name[0] == 'r' ? "a" : "b"), "vocab.bpe",
                                                 row.text);
    CHECK_THROWS_WITH_AS(load_gpt2_vocab(dir), doctest::Contains((dir + "/" + row.says).c_str()), InputError);
  }
}
