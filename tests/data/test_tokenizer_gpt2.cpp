// GPT-2 BPE tokenizer: ids equal the reference encoder's (tests/data/gpt2_reference.tsv, made
// by scripts/reference/gpt2_reference_ids.js with npm gpt-3-encoder), round trips for any
// bytes, decoding of partial UTF-8, out-of-range ids, malformed tokenizer files.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "data/gpt2_tokenizer.h"
#include "data/shuffle.h"
#include "kernels/base/errors.h"
#include "tests/data/data_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("gpt2 tokenizer: the issue's example") {
  const auto tok = load_gpt2();
  CHECK(tok->vocab_size() == 50257);
  CHECK(tok->eot() == 50256);
  const std::vector<int32_t> expected = {15496, 995, 11, 428, 318, 402, 11571, 12, 17, 13};
  CHECK(tok->encode("Hello world, this is GPT-2.") == expected);
  CHECK(tok->decode(expected) == "Hello world, this is GPT-2.");
}

TEST_CASE("gpt2 tokenizer: ids equal the reference encoder's on the tricky-string table") {
  const auto tok = load_gpt2();
  int cases = 0;
  for (const ReferenceCase& c : read_reference_table(source_dir() + "/tests/data/gpt2_reference.tsv")) {
    INFO(c.comment);
    CHECK(tok->encode(c.text) == c.ids);
    CHECK(tok->decode(c.ids) == c.text);
    ++cases;
  }
  CHECK(cases >= 350);
}

TEST_CASE("gpt2 tokenizer: '<|endoftext|>' in text is plain characters") {
  const auto tok = load_gpt2();
  const auto ids = tok->encode("a<|endoftext|>b");
  for (int32_t id : ids) CHECK(id != tok->eot());
  CHECK(tok->decode({tok->eot()}) == "<|endoftext|>");
}

namespace {

std::string utf8_of(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

// Random valid UTF-8: mostly ASCII (letters, digits, spaces, punctuation), some code points
// from all planes (surrogates skipped).
std::string random_utf8(SplitMix64* rng, size_t n_chars) {
  static constexpr char kAscii[] = "abcXYZ019 '  \t\n\r.,-!?\"";
  std::string s;
  for (size_t i = 0; i < n_chars; ++i) {
    const uint64_t kind = rng->below(4);
    if (kind < 2) {
      s.push_back(kAscii[rng->below(sizeof kAscii - 1)]);
    } else {
      uint32_t cp = 0;
      do {
        cp = static_cast<uint32_t>(kind == 2 ? rng->below(0x3000) : rng->below(0x110000));
      } while (cp >= 0xD800 && cp <= 0xDFFF);
      s += utf8_of(cp);
    }
  }
  return s;
}

}  // namespace

TEST_CASE("gpt2 tokenizer: decode(encode(x)) == x for random UTF-8 and for arbitrary bytes") {
  const auto tok = load_gpt2();
  SplitMix64 rng(7);
  for (int i = 0; i < 300; ++i) {
    const std::string s = random_utf8(&rng, 1 + rng.below(60));
    const auto ids = tok->encode(s);
    CHECK(tok->decode(ids) == s);
    for (int32_t id : ids) CHECK((id >= 0 && id < tok->eot()));
  }
  for (int i = 0; i < 300; ++i) {  // not UTF-8 at all: every byte must survive
    std::string s(1 + rng.below(40), '\0');
    for (char& c : s) c = static_cast<char>(rng.below(256));
    CHECK(tok->decode(tok->encode(s)) == s);
  }
}

TEST_CASE("gpt2 tokenizer: ids whose bytes are not valid UTF-8 decode to those raw bytes") {
  const auto tok = load_gpt2();
  // "日本" is 6 bytes; GPT-2 splits it into tokens that cut through the characters.
  const std::string text = "\xE6\x97\xA5\xE6\x9C\xAC";
  const auto ids = tok->encode(text);
  REQUIRE(ids.size() > 1);
  std::string joined;
  bool some_partial = false;
  for (int32_t id : ids) {
    const std::string part = tok->decode({id});
    some_partial = some_partial || part.size() % 3 != 0;
    joined += part;
  }
  CHECK(some_partial);
  CHECK(joined == text);
  // Lone bytes come out unchanged, with no replacement character.
  CHECK(tok->decode(tok->encode("\xFF")) == "\xFF");
  CHECK(tok->decode(tok->encode("\xE6")) == "\xE6");
}

TEST_CASE("gpt2 tokenizer: an id outside the vocabulary is an InputError naming it") {
  const auto tok = load_gpt2();
  CHECK_THROWS_WITH_AS(tok->decode({50257}), doctest::Contains("50257"), InputError);
  CHECK_THROWS_AS(tok->decode({-1}), InputError);
}

TEST_CASE("gpt2 tokenizer: the cache never changes a result") {
  const auto a = load_gpt2();
  const std::string text = "The cache holds pieces; the second pass hits it. Ünïcödé 123 !!";
  const auto first = a->encode(text);
  CHECK(a->encode(text) == first);
  const auto b = load_gpt2();
  CHECK(b->encode(text.substr(0, 20)) == a->encode(text.substr(0, 20)));
  CHECK(b->encode(text) == first);
}
