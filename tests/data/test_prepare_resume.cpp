// `data prepare` resuming: a run that fails after finishing shards keeps them, and a rerun
// with the same options writes only the rest, ending byte-identical to an uninterrupted run;
// changed options or inputs start afresh.
#include <doctest/doctest.h>

#include <filesystem>
#include <stdexcept>

#include "data/prepare.h"
#include "tests/data/data_test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

PrepareOptions options(const std::string& dir, const std::string& out) {
  PrepareOptions o;
  o.inputs = {dir + "/a.jsonl", dir + "/b.jsonl"};
  o.tokenizer = "byte";
  o.out_dir = out;
  o.val_fraction = 0.3;
  o.shard_tokens = 300;
  o.batch_bytes = 200;
  o.threads = 2;
  return o;
}

std::string all_bytes(const PrepareSummary& s) {
  std::string out;
  for (const auto* list : {&s.train_shards, &s.val_shards})
    for (const std::string& p : *list) out += p.substr(p.rfind('/')) + read_text_file(p);
  return out;
}

// Counts the tokenized batches, and fails after `batches` of them.
PrepareProgress stop_after(int batches, int* seen) {
  return [=](PreparePhase phase, int64_t, int64_t) {
    if (phase == PreparePhase::tokenizing && ++*seen > batches) throw Interrupted();
  };
}

}  // namespace

TEST_CASE("prepare resume: a rerun keeps the finished shards and ends identical") {
  const std::string dir = scratch_dir("prepare_resume");
  for (const char* name : {"a", "b"}) {
    std::string text;
    for (int i = 0; i < 60; ++i)
      text += "{\"text\": \"" + std::string(name) + " document " + std::to_string(i) + " " +
              std::string(static_cast<size_t>((i * 7) % 53), 'z') + "\"}\n";
    write_text_file(dir + "/" + std::string(name) + ".jsonl", text);
  }
  int n_batches = 0;
  const PrepareSummary want = prepare_shards(options(dir, dir + "/ref"), stop_after(1 << 30, &n_batches));
  REQUIRE(want.train_shards.size() >= 6);
  REQUIRE(n_batches >= 12);

  for (int batches : {n_batches / 4, n_batches / 2, n_batches - 2}) {
    CAPTURE(batches);
    const std::string out = dir + "/run" + std::to_string(batches);
    int seen = 0;
    CHECK_THROWS_AS(prepare_shards(options(dir, out), stop_after(batches, &seen)), Interrupted);
    REQUIRE(std::filesystem::exists(out + "/.staging/state"));
    CHECK(!std::filesystem::exists(out + "/train_000000.bin"));  // nothing published yet
    const PrepareSummary got = prepare_shards(options(dir, out), nullptr);
    CHECK(got.resumed_shards > 0);
    CHECK(got.train_documents == want.train_documents);
    CHECK(got.train_tokens == want.train_tokens);
    CHECK(got.val_tokens == want.val_tokens);
    CHECK(all_bytes(got) == all_bytes(want));
    CHECK(!std::filesystem::exists(out + "/.staging"));
  }

  // Another seed is another run: the staged shards are not reused.
  const std::string out = dir + "/changed";
  int seen = 0;
  CHECK_THROWS_AS(prepare_shards(options(dir, out), stop_after(n_batches / 2, &seen)), Interrupted);
  auto o = options(dir, out);
  o.seed = 99;
  const PrepareSummary fresh = prepare_shards(o, nullptr);
  CHECK(fresh.resumed_shards == 0);
  o.out_dir = dir + "/changed_ref";
  const PrepareSummary fresh_ref = prepare_shards(o, nullptr);
  CHECK(all_bytes(fresh) == all_bytes(fresh_ref));
}
