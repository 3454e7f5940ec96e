// `trainer data prepare`: document splitting, the validation draw, shard contents and sizes,
// replacing an earlier run's shards, option and input errors. The CLI's exit codes are tested
// in tests/app/test_data_cli.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "data/documents.h"
#include "data/prepare.h"
#include "data/token_shard.h"
#include "kernels/base/errors.h"
#include "tests/data/data_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

std::vector<std::string> docs_of(const std::string& text, int blank_lines) {
  std::vector<std::string> out;
  for (const DocumentSpan& d : split_documents(text, blank_lines))
    out.push_back(text.substr(d.offset, d.length));
  return out;
}

using Docs = std::vector<std::string>;

std::vector<int32_t> read_all(const std::string& path) {
  const Shard s(path, 0);
  std::vector<int32_t> t(static_cast<size_t>(s.tokens()));
  s.read(0, s.tokens(), t.data());
  return t;
}

// The documents of a split, read back from its shards (byte tokenizer: eot = 256).
Docs read_docs(const std::vector<std::string>& shards) {
  std::vector<int32_t> all;
  for (const std::string& p : shards) {
    const auto t = read_all(p);
    all.insert(all.end(), t.begin(), t.end());
  }
  Docs docs;
  for (int32_t id : all) {
    if (id == 256) {
      docs.emplace_back();
    } else {
      REQUIRE(!docs.empty());  // every document starts with end-of-text
      docs.back().push_back(static_cast<char>(id));
    }
  }
  return docs;
}

PrepareOptions byte_options(const std::string& out, const std::vector<std::string>& inputs) {
  return byte_prepare_options(out, inputs);
}

}  // namespace

TEST_CASE("documents: split at runs of blank lines, trimmed, byte exact") {
  CHECK(docs_of("a\nb\n\n\n\nc\n", 3) == Docs{"a\nb\n", "c\n"});
  CHECK(docs_of("a\n\n\nb", 3) == Docs{"a\n\n\nb"});  // two blank lines do not split
  CHECK(docs_of("\n\n  \nx\n\n", 3) == Docs{"x\n"});
  CHECK(docs_of("a\r\n\r\n \r\n\t\r\nb", 3) == Docs{"a\r\n", "b"});
  CHECK(docs_of("abc", 1) == Docs{"abc"});
  CHECK(docs_of("a\n\nb\n", 1) == Docs{"a\n", "b\n"});
  CHECK(docs_of("  whole \n\n\n\n text", 0) == Docs{"  whole \n\n\n\n text"});
  CHECK(docs_of(" \n\t\n", 0) == Docs{});
  CHECK(docs_of("", 3) == Docs{});
}

TEST_CASE("prepare: every document once, with end-of-text first, validation drawn by seed") {
  const std::string dir = scratch_dir("prepare_docs");
  const auto inputs = write_corpus(dir);
  const PrepareSummary s = prepare_shards(byte_options(dir + "/out", inputs), nullptr);
  CHECK(s.files == 2);
  CHECK(s.train_documents == 16);
  CHECK(s.val_documents == 4);
  REQUIRE(s.train_shards == std::vector<std::string>{dir + "/out/train_000000.bin"});
  REQUIRE(s.val_shards == std::vector<std::string>{dir + "/out/val_000000.bin"});
  const Docs train = read_docs(s.train_shards), val = read_docs(s.val_shards);
  CHECK(static_cast<int64_t>(read_all(s.train_shards[0]).size()) == s.train_tokens);
  Docs all = train;
  all.insert(all.end(), val.begin(), val.end());
  std::sort(all.begin(), all.end());
  Docs expected;
  for (int i = 0; i < 20; ++i)
    expected.push_back("doc " + std::to_string(100 + i) + " first line\nsecond line\n\nparagraph\n");
  CHECK(all == expected);
  CHECK(std::is_sorted(train.begin(), train.end()));  // input order kept within a split

  const PrepareSummary again = prepare_shards(byte_options(dir + "/again", inputs), nullptr);
  CHECK(read_docs(again.val_shards) == val);
  auto o = byte_options(dir + "/other", inputs);
  o.seed = 7;
  CHECK(read_docs(prepare_shards(o, nullptr).val_shards) != val);
}

TEST_CASE("prepare: shards hold shard_tokens, the last two share the remainder") {
  const std::string dir = scratch_dir("prepare_sizes");
  const auto inputs = write_corpus(dir);
  auto o = byte_options(dir + "/out", inputs);
  o.val_fraction = 0;
  o.shard_tokens = 100;
  const PrepareSummary s = prepare_shards(o, nullptr);
  CHECK(s.val_shards.empty());
  REQUIRE(s.train_shards.size() >= 3);
  int64_t total = 0;
  for (size_t i = 0; i < s.train_shards.size(); ++i) {
    const int64_t n = Shard(s.train_shards[i], 257).tokens();
    total += n;
    if (i + 2 < s.train_shards.size()) CHECK(n == 100);
    else CHECK((n >= 50 && n <= 100));
  }
  CHECK(total == s.train_tokens);
  CHECK(read_docs(s.train_shards).size() == 20);
}

TEST_CASE("prepare: gpt2 shards hold end-of-text and the tokenizer's ids") {
  const std::string dir = scratch_dir("prepare_gpt2");
  write_text_file(dir + "/t.txt", "Hello world, this is GPT-2.\n\n\n\nSecond document here.\n");
  PrepareOptions o;
  o.inputs = {dir + "/t.txt"};
  o.tokenizer_dir = tokenizer_dir();
  o.out_dir = dir + "/out";
  o.val_fraction = 0;
  const PrepareSummary s = prepare_shards(o, nullptr);
  const auto tok = load_gpt2();
  std::vector<int32_t> want = {50256};
  for (int32_t id : tok->encode("Hello world, this is GPT-2.\n")) want.push_back(id);
  want.push_back(50256);
  for (int32_t id : tok->encode("Second document here.\n")) want.push_back(id);
  CHECK(read_all(s.train_shards[0]) == want);
  CHECK(Shard(s.train_shards[0], 50257).width() == TokenWidth::u16);
}

TEST_CASE("prepare: a re-run replaces the earlier shards and leaves other files alone") {
  const std::string dir = scratch_dir("prepare_rerun");
  const auto inputs = write_corpus(dir);
  std::filesystem::create_directories(dir + "/out");
  write_text_file(dir + "/out/train_000007.bin", "old");
  write_text_file(dir + "/out/train_000000.bin", "old");
  write_text_file(dir + "/out/notes.txt", "mine");
  const PrepareSummary s = prepare_shards(byte_options(dir + "/out", inputs), nullptr);
  CHECK(s.stale_shards_removed == 1);
  CHECK(!std::filesystem::exists(dir + "/out/train_000007.bin"));
  CHECK(!std::filesystem::exists(dir + "/out/.staging"));
  CHECK(read_text_file(dir + "/out/notes.txt") == "mine");
  CHECK(Shard(dir + "/out/train_000000.bin", 257).tokens() == s.train_tokens);
}

TEST_CASE("prepare: bad options are ConfigErrors, bad inputs InputErrors naming the file") {
  const std::string dir = scratch_dir("prepare_errors");
  const auto inputs = write_corpus(dir);
  auto o = byte_options(dir + "/out", inputs);
  o.val_fraction = 1.0;
  CHECK_THROWS_AS(prepare_shards(o, nullptr), ConfigError);
  o = byte_options(dir + "/out", inputs);
  o.shard_tokens = 0;
  CHECK_THROWS_AS(prepare_shards(o, nullptr), ConfigError);
  o = byte_options(dir + "/out", {dir + "/missing.txt"});
  CHECK_THROWS_WITH_AS(prepare_shards(o, nullptr), doctest::Contains("missing.txt"), InputError);
  o = byte_options(dir + "/out", {dir + "/*.none"});
  CHECK_THROWS_WITH_AS(prepare_shards(o, nullptr), doctest::Contains("*.none"), InputError);
  write_text_file(dir + "/one.txt", "just one document\n");
  o = byte_options(dir + "/out", {dir + "/one.txt"});
  CHECK_THROWS_WITH_AS(prepare_shards(o, nullptr), doctest::Contains("found 1 document in"),
                       InputError);
  o.val_fraction = 0;
  CHECK(prepare_shards(o, nullptr).train_documents == 1);
  write_text_file(dir + "/blank.txt", "\n \n");
  o = byte_options(dir + "/out", {dir + "/blank.txt"});
  CHECK_THROWS_WITH_AS(prepare_shards(o, nullptr), doctest::Contains("found no text in"), InputError);
}
