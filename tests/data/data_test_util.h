// Helpers for the data tests (and the app tests of `trainer data`): the GPT-2 tokenizer from
// datasets/tokenizer (which scripts/test.sh fetches before ctest; a missing directory fails the
// test with the fix), hex decoding, reference-id tables, writing shards byte by byte, and a
// small text corpus.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "data/prepare.h"
#include "data/tokenizer.h"
#include "tests/support/test_util.h"

namespace trainer::testing {

inline std::string tokenizer_dir() { return source_dir() + "/datasets/tokenizer"; }

inline std::unique_ptr<Tokenizer> load_gpt2() {
  const std::string dir = tokenizer_dir();
  if (!std::filesystem::exists(dir + "/encoder.json") || !std::filesystem::exists(dir + "/vocab.bpe"))
    FAIL("GPT-2 tokenizer files missing in " << dir << ": run scripts/fetch_data.sh first");
  return make_tokenizer(TokenizerKind::gpt2, dir);
}

inline std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// A shard file built field by field, as llm.c's data_common.write_datafile does with numpy:
// np.zeros(256, int32) header with [0] magic, [1] version, [2] count, then the tokens'
// little-endian bytes. Any header field can be overridden to build a broken file.
struct RawShard {
  int32_t magic = 20240520;
  int32_t version = 1;
  int64_t count = -1;  // -1: the number of tokens
  int width = 2;       // bytes per token
  std::vector<uint32_t> tokens;
  size_t truncate = 0;  // bytes cut from the end

  std::string bytes() const {
    std::string out(1024, '\0');
    const int32_t header[3] = {magic, version,
                               static_cast<int32_t>(count < 0 ? static_cast<int64_t>(tokens.size()) : count)};
    std::memcpy(&out[0], header, sizeof header);
    for (uint32_t t : tokens)
      for (int b = 0; b < width; ++b) out.push_back(static_cast<char>((t >> (8 * b)) & 0xFF));
    out.resize(out.size() - truncate);
    return out;
  }
  void write(const std::string& path) const { write_text_file(path, bytes()); }
};

// Two files holding 20 documents "doc NN ..." separated by four blank lines.
inline std::vector<std::string> write_corpus(const std::string& dir) {
  std::string a, b;
  for (int i = 0; i < 20; ++i) {
    std::string doc = "doc " + std::to_string(100 + i) + " first line\nsecond line\n\nparagraph\n";
    (i < 12 ? a : b) += doc + "\n\n\n\n";
  }
  write_text_file(dir + "/a.txt", a);
  write_text_file(dir + "/b.txt", "\n\n" + b);
  return {dir + "/a.txt", dir + "/b.txt"};
}

// `data prepare` options for the byte tokenizer: 20% validation, 1 Mi-token shards.
inline PrepareOptions byte_prepare_options(const std::string& out, const std::vector<std::string>& inputs) {
  PrepareOptions o;
  o.inputs = inputs;
  o.tokenizer = "byte";
  o.out_dir = out;
  o.val_fraction = 0.2;
  o.shard_tokens = 1 << 20;
  return o;
}

// A reference-id table (tests/data/*_reference.tsv, written by scripts/reference/*.js): '#'
// lines are comments (the last one names the next case), data lines are <hex of the UTF-8
// text> TAB <ids>.
struct ReferenceCase {
  std::string comment, text;
  std::vector<int32_t> ids;
};
inline std::vector<ReferenceCase> read_reference_table(const std::string& path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::vector<ReferenceCase> cases;
  std::string line, comment;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line[0] == '#') {
      comment = line;
      continue;
    }
    const size_t tab = line.find('\t');
    REQUIRE(tab != std::string::npos);
    ReferenceCase c{comment, from_hex(line.substr(0, tab)), {}};
    std::istringstream ids(line.substr(tab + 1));
    for (int32_t id = 0; ids >> id;) c.ids.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

// A loader's next micro-batch of B samples of T tokens from shards whose tokens count up
// (token p of a source is its start + p): the first token of each sample, after checking that
// inputs are consecutive and targets are the inputs shifted by one.
template <class Loader>
std::vector<int32_t> next_sample_starts(Loader& loader, int B, int T) {
  std::vector<int32_t> x(static_cast<size_t>(B * T)), y(x.size()), starts;
  loader.next(x.data(), y.data());
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      CHECK(x[b * T + t] == x[b * T] + t);
      CHECK(y[b * T + t] == x[b * T] + t + 1);
    }
    starts.push_back(x[b * T]);
  }
  return starts;
}

}  // namespace trainer::testing
