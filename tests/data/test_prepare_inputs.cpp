// `data prepare` on JSONL inputs, plain, gzip and zstd, by file, glob and directory; nested
// text fields; each bad-line case (an error naming file and line, or skipped and counted);
// and shards that do not depend on the thread count.
#include <doctest/doctest.h>
#include <zlib.h>
#include <zstd.h>

#include <filesystem>

#include "data/prepare.h"
#include "data/token_shard.h"
#include "kernels/base/errors.h"
#include "tests/data/data_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

// 20 documents, the same as write_corpus's, as JSON Lines: {"id": N, "text": ..., "meta":
// {"body": ...}}, with a blank line in the middle (no document).
std::string corpus_jsonl() {
  std::string out;
  for (int i = 0; i < 20; ++i) {
    out += "{\"id\": " + std::to_string(i) + ", \"text\": \"doc " + std::to_string(100 + i) +
           " first line\\nsecond line\\n\\nparagraph\\n\", \"meta\": {\"body\": \"m\\u00e9ta " +
           std::to_string(i) + "\"}}\n";
    if (i == 9) out += "\n";
  }
  return out;
}

void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, text.data(), static_cast<unsigned>(text.size())) == static_cast<int>(text.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

std::string zstd_bytes(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  const size_t n = ZSTD_compress(&out[0], out.size(), text.data(), text.size(), 3);
  REQUIRE(!ZSTD_isError(n));
  out.resize(n);
  return out;
}

PrepareOptions options(const std::string& out, const std::vector<std::string>& inputs) {
  return byte_prepare_options(out, inputs);
}

std::string shard_bytes(const std::vector<std::string>& shards) {
  std::string all;
  for (const std::string& s : shards) all += read_text_file(s) + "|";
  return all;
}

std::string error_of(const PrepareOptions& o) {
  try {
    prepare_shards(o, nullptr);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("prepare inputs: jsonl, jsonl.gz and jsonl.zst give the shards the text corpus gives") {
  const std::string dir = scratch_dir("prepare_jsonl");
  const auto txt = write_corpus(dir);
  const PrepareSummary want = prepare_shards(options(dir + "/out_txt", txt), nullptr);
  write_text_file(dir + "/c.jsonl", corpus_jsonl());
  write_gzip(dir + "/c.jsonl.gz", corpus_jsonl());
  write_text_file(dir + "/c.jsonl.zst", zstd_bytes(corpus_jsonl()));
  for (const char* name : {"c.jsonl", "c.jsonl.gz", "c.jsonl.zst"}) {
    CAPTURE(name);
    const PrepareSummary got = prepare_shards(options(dir + "/out_" + name, {dir + "/" + name}), nullptr);
    CHECK(got.train_documents == 16);
    CHECK(got.val_documents == 4);
    CHECK(got.train_tokens == want.train_tokens);
    CHECK(got.val_tokens == want.val_tokens);
    CHECK(shard_bytes(got.train_shards) == shard_bytes(want.train_shards));
    CHECK(shard_bytes(got.val_shards) == shard_bytes(want.val_shards));
  }
  // Two zstd frames and two gzip members back to back are one stream each.
  write_text_file(dir + "/two.jsonl.zst", zstd_bytes(corpus_jsonl().substr(0, 100)) +
                                              zstd_bytes(corpus_jsonl().substr(100)));
  CHECK(prepare_shards(options(dir + "/out_two", {dir + "/two.jsonl.zst"}), nullptr).train_tokens ==
        want.train_tokens);
}

TEST_CASE("prepare inputs: nested text field, glob, directory and plain .txt.gz") {
  const std::string dir = scratch_dir("prepare_field");
  std::filesystem::create_directories(dir + "/in/sub");
  write_text_file(dir + "/in/a.jsonl", corpus_jsonl());
  write_gzip(dir + "/in/sub/b.jsonl.gz", corpus_jsonl());
  write_text_file(dir + "/in/.hidden.jsonl", "not json\n");
  auto o = options(dir + "/out", {dir + "/in"});
  o.val_fraction = 0;
  o.text_field = "meta.body";
  const PrepareSummary s = prepare_shards(o, nullptr);
  CHECK(s.files == 2);
  CHECK(s.train_documents == 40);
  const Shard shard(s.train_shards[0], 257);
  std::vector<int32_t> t(static_cast<size_t>(shard.tokens()));
  shard.read(0, shard.tokens(), t.data());
  std::string first;
  for (size_t i = 1; i < t.size() && t[i] != 256; ++i) first.push_back(static_cast<char>(t[i]));
  CHECK(first == "m\xc3\xa9ta 0");
  o.inputs = {dir + "/in/*.jsonl", dir + "/in/sub/*.gz"};
  CHECK(shard_bytes(prepare_shards(o, nullptr).train_shards) == shard_bytes(s.train_shards));
  o.inputs = {dir + "/in", dir + "/in/a.jsonl"};
  CHECK(error_of(o).find("named twice") != std::string::npos);

  write_gzip(dir + "/t.txt.gz", "one\n\n\n\ntwo\n");
  o = options(dir + "/out_t", {dir + "/t.txt.gz"});
  o.val_fraction = 0;
  CHECK(prepare_shards(o, nullptr).train_tokens == 2 + 4 + 4);
}

TEST_CASE("prepare inputs: a bad jsonl line is an error naming file and line, or skipped and counted") {
  const std::string dir = scratch_dir("prepare_bad_lines");
  struct Case {
    const char* line;
    const char* says;
  };
  const Case cases[] = {
      {"{\"text\": \"unterminated}", "not valid JSON: column"},
      {"plain words", "not valid JSON: column 1"},
      {"{\"title\": \"no text\"}", "no field 'text'"},
      {"{\"text\": 42}", "field 'text' is a number, not a string"},
      {"[\"text\"]", "is an array, not an object"},
      {"{\"text\": \"a\"} trailing", "not valid JSON"},
      {"{\"text\": \"a\", \"text\": \"b\"}", "not valid JSON: column 15: duplicate key \"text\" (first at column 2)"},
  };
  int n = 0;
  for (const Case& c : cases) {
    CAPTURE(c.line);
    const std::string path = dir + "/bad" + std::to_string(n++) + ".jsonl";
    write_text_file(path, "{\"text\": \"fine\"}\n{\"text\": \"fine too\"}\n" + std::string(c.line) +
                              "\n{\"text\": \"last\"}\n");
    auto o = options(dir + "/out", {path});
    o.val_fraction = 0;
    const std::string err = error_of(o);
    CHECK(err.find(path + ":3: ") != std::string::npos);
    CHECK(err.find(c.says) != std::string::npos);
    o.bad_lines = BadLines::skip;
    const PrepareSummary s = prepare_shards(o, nullptr);
    CHECK(s.skipped_lines == 1);
    CHECK(s.train_documents == 3);
  }
  write_text_file(dir + "/nested.jsonl", "{\"meta\": {\"body\": \"x\"}}\n{\"meta\": \"flat\"}\n");
  auto o = options(dir + "/out", {dir + "/nested.jsonl"});
  o.val_fraction = 0;
  o.text_field = "meta.body";
  CHECK(error_of(o).find("nested.jsonl:2: 'meta' is a string, not an object") != std::string::npos);
  o.text_field = "meta..body";
  CHECK_THROWS_AS(prepare_shards(o, nullptr), ConfigError);

  write_text_file(dir + "/broken.jsonl.zst", zstd_bytes(corpus_jsonl()).substr(0, 40));
  o = options(dir + "/out", {dir + "/broken.jsonl.zst"});
  CHECK(error_of(o).find("broken.jsonl.zst") != std::string::npos);
  write_text_file(dir + "/broken.jsonl.gz", "\x1f\x8b\x08\x00garbage");
  o = options(dir + "/out", {dir + "/broken.jsonl.gz"});
  CHECK(error_of(o).find("broken.jsonl.gz") != std::string::npos);
  // Plain text under a .gz name (zlib would read it through as text) and an empty .gz: refused.
  for (const char* name : {"/plain.jsonl.gz", "/plain.txt.gz", "/empty.txt.gz"}) {
    CAPTURE(name);
    write_text_file(dir + name, std::string(name).find("empty") != std::string::npos ? "" : "{\"text\": \"hi\"}\n");
    o = options(dir + "/out", {dir + name});
    CHECK(error_of(o).find("input '" + dir + name + "' is named .gz but holds no gzip data") != std::string::npos);
  }
}

TEST_CASE("prepare inputs: the shards are byte-identical with 1, 2 and 3 threads") {
  const std::string dir = scratch_dir("prepare_threads");
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += "{\"text\": \"Document " + std::to_string(i) + " says hello, world " +
            std::string(static_cast<size_t>(i % 37), 'x') + ".\"}\n";
  write_text_file(dir + "/t.jsonl", text);
  std::string want;
  for (int threads : {1, 2, 3}) {
    CAPTURE(threads);
    auto o = options(dir + "/out" + std::to_string(threads), {dir + "/t.jsonl"});
    o.tokenizer = "gpt2";
    o.tokenizer_dir = tokenizer_dir();
    o.shard_tokens = 1000;
    o.batch_bytes = 700;  // many batches, each split over the threads
    o.threads = threads;
    const PrepareSummary s = prepare_shards(o, nullptr);
    CHECK(s.threads == threads);
    REQUIRE(s.train_shards.size() >= 3);
    const std::string got = shard_bytes(s.train_shards) + shard_bytes(s.val_shards);
    if (want.empty()) want = got;
    CHECK(got == want);
  }
}
