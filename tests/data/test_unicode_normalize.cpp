// NFC and NFKC equal node's String.prototype.normalize on every code point that decomposes
// and on random mark sequences (tests/data/unicode_normalize_reference.tsv, made by
// scripts/reference/unicode_normalize_ids.js); bytes that are not UTF-8 pass through.
#include <doctest/doctest.h>

#include <fstream>

#include "data/unicode_normalize.h"
#include "tests/data/data_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("unicode normalize: NFC and NFKC equal node's on the reference table") {
  std::ifstream in(source_dir() + "/tests/data/unicode_normalize_reference.tsv");
  REQUIRE(in.good());
  std::string line;
  int n = 0, nfc_changed = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t a = line.find('\t'), b = line.find('\t', a + 1);
    REQUIRE(b != std::string::npos);
    const std::string text = from_hex(line.substr(0, a));
    INFO(line);
    const std::string nfc = from_hex(line.substr(a + 1, b - a - 1));
    CHECK(unicode_normalize(text, NormalForm::nfc) == nfc);
    CHECK(unicode_normalize(text, NormalForm::nfkc) == from_hex(line.substr(b + 1)));
    nfc_changed += nfc != text;
    ++n;
  }
  CHECK(n > 7000);
  CHECK(nfc_changed > 1000);
}

TEST_CASE("unicode normalize: invalid UTF-8 passes through and blocks composition") {
  CHECK(unicode_normalize("a\xFF\xCC\x81", NormalForm::nfc) == "a\xFF\xCC\x81");
  CHECK(unicode_normalize("e\xCC\x81\xC0", NormalForm::nfc) == "\xC3\xA9\xC0");
  CHECK(unicode_normalize("plain ascii", NormalForm::nfkc) == "plain ascii");
}
