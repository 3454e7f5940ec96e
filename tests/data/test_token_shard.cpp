// Token shards: round trips of both widths, files made exactly as llm.c makes them (field by
// field here, and by numpy through python3 with llm.c's own write_datafile code), and every
// kind of bad file as an InputError naming it.
#include <doctest/doctest.h>

#include <filesystem>

#include "data/file_glob.h"
#include "data/loader.h"
#include "data/token_shard.h"
#include "kernels/base/errors.h"
#include "tests/data/data_test_util.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("shard: uint16 and uint32 shards round-trip with exact file sizes") {
  const std::string dir = scratch_dir("shard_roundtrip");
  const std::vector<int32_t> small = {0, 1, 50256, 65535, 7};
  write_shard(dir + "/a.bin", small, TokenWidth::u16);
  const Shard a(dir + "/a.bin", 65536);
  CHECK(a.width() == TokenWidth::u16);
  CHECK(a.tokens() == 5);
  CHECK(read_text_file(dir + "/a.bin").size() == 1024 + 2 * 5);
  std::vector<int32_t> got(5);
  a.read(0, 5, got.data());
  CHECK(got == small);
  CHECK(a.max_token() == 65535);

  const std::vector<int32_t> big = {0, 65536, 128255, 3};
  write_shard(dir + "/b.bin", big, TokenWidth::u32);
  const Shard b(dir + "/b.bin", 128256);
  CHECK(b.width() == TokenWidth::u32);
  CHECK(read_text_file(dir + "/b.bin").size() == 1024 + 4 * 4);
  got.resize(4);
  b.read(0, 4, got.data());
  CHECK(got == big);
  CHECK(token_width_for_vocab(50257) == TokenWidth::u16);
  CHECK(token_width_for_vocab(65536) == TokenWidth::u16);
  CHECK(token_width_for_vocab(65537) == TokenWidth::u32);
  CHECK_THROWS_AS(write_shard(dir + "/c.bin", big, TokenWidth::u16), std::logic_error);
}

TEST_CASE("shard: a file built field by field like llm.c's write_datafile loads unchanged") {
  const std::string dir = scratch_dir("shard_llmc");
  RawShard raw;
  for (uint32_t i = 0; i < 300; ++i) raw.tokens.push_back((i * 7919) % 50257);
  raw.write(dir + "/fineweb_train_000001.bin");
  const Shard s(dir + "/fineweb_train_000001.bin", 50257);
  REQUIRE(s.tokens() == 300);
  for (int64_t i = 0; i < 300; ++i) CHECK(s.token(i) == static_cast<int32_t>(raw.tokens[i]));

  LoaderOptions o;
  o.sources = single_source(dir + "/fineweb_train_*.bin");
  o.seq_len = 16;
  o.micro_batch = 2;
  o.vocab_size = 50257;
  o.shuffle = Shuffle::off;
  DataLoader loader(o);
  std::vector<int32_t> x(32), y(32);
  loader.next(x.data(), y.data());
  for (int i = 0; i < 16; ++i) {
    CHECK(x[i] == static_cast<int32_t>(raw.tokens[i]));
    CHECK(y[i] == static_cast<int32_t>(raw.tokens[i + 1]));
    CHECK(x[16 + i] == static_cast<int32_t>(raw.tokens[16 + i]));
  }
}

TEST_CASE("shard: files written by llm.c's data_common.write_datafile (numpy) load unchanged") {
  const std::string dir = scratch_dir("shard_numpy");
  // Debian's python3 with python3-numpy (a project dependency). The body of llm.c's dev/data/data_common.py write_datafile, for both of its formats.
  const std::string script =
      "import numpy as np, sys\n"
      "def write_datafile(filename, toks, magic, version, dtype):\n"
      "    header = np.zeros(256, dtype=np.int32)\n"
      "    header[0] = magic\n"
      "    header[1] = version\n"
      "    header[2] = len(toks)\n"
      "    toks_np = np.array(toks, dtype=dtype)\n"
      "    with open(filename, 'wb') as f:\n"
      "        f.write(header.tobytes())\n"
      "        f.write(toks_np.tobytes())\n"
      "toks = [(i * 31337) % 50257 for i in range(1000)]\n"
      "write_datafile(sys.argv[1] + '/gpt2.bin', toks, 20240520, 1, np.uint16)\n"
      "write_datafile(sys.argv[1] + '/llama3.bin', [t * 2 + 70000 for t in toks], 20240801, 7,"
      " np.uint32)\n";
  write_text_file(dir + "/write.py", script);
  const RunResult r = run_command("/usr/bin/python3 " + dir + "/write.py " + dir);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const Shard g(dir + "/gpt2.bin", 50257);
  const Shard l(dir + "/llama3.bin", 200000);
  REQUIRE(g.tokens() == 1000);
  REQUIRE(l.tokens() == 1000);
  CHECK(l.width() == TokenWidth::u32);
  for (int64_t i = 0; i < 1000; ++i) {
    CHECK(g.token(i) == (i * 31337) % 50257);
    CHECK(l.token(i) == ((i * 31337) % 50257) * 2 + 70000);
  }
}

namespace {

// Opening `path` as a shard (and through a loader) fails with an InputError that names it and
// says `what`.
void check_bad_shard(const std::string& path, const std::string& what, int64_t vocab = 50257) {
  INFO(path << ": " << what);
  CHECK_THROWS_WITH_AS(Shard(path, vocab), doctest::Contains(path.c_str()), InputError);
  CHECK_THROWS_WITH_AS(Shard(path, vocab), doctest::Contains(what.c_str()), InputError);
  LoaderOptions o;
  o.sources = single_source(path);
  o.seq_len = 4;
  o.micro_batch = 1;
  o.vocab_size = static_cast<int>(vocab);
  CHECK_THROWS_WITH_AS(DataLoader{o}, doctest::Contains(path.c_str()), InputError);
}

}  // namespace

TEST_CASE("shard: each kind of bad file is an InputError naming the file") {
  const std::string dir = scratch_dir("shard_bad");
  RawShard good;
  good.tokens.assign(100, 42);

  RawShard r = good;
  r.magic = 20240326;  // llm.c's model file, not a shard
  r.write(dir + "/magic.bin");
  check_bad_shard(dir + "/magic.bin", "magic number 20240326");

  r = good;
  r.version = 2;
  r.write(dir + "/version.bin");
  check_bad_shard(dir + "/version.bin", "version 2 is not supported");

  r = good;
  r.truncate = 3;
  r.write(dir + "/truncated.bin");
  check_bad_shard(dir + "/truncated.bin", "header says 100 tokens");

  r = good;
  r.count = 150;
  r.write(dir + "/count.bin");
  check_bad_shard(dir + "/count.bin", "header says 150 tokens");

  r = good;
  r.tokens[57] = 50257;
  r.write(dir + "/vocab.bin");
  check_bad_shard(dir + "/vocab.bin", "token 50257 at position 57");

  r = good;
  r.magic = 20240801;
  r.version = 7;
  r.width = 4;
  r.tokens[3] = 1u << 20;
  r.write(dir + "/vocab32.bin");
  check_bad_shard(dir + "/vocab32.bin", "token 1048576 at position 3", 200000);

  write_text_file(dir + "/tiny.bin", "not a shard");
  check_bad_shard(dir + "/tiny.bin", "less than the 1024-byte header");
  write_text_file(dir + "/empty.bin", "");
  check_bad_shard(dir + "/empty.bin", "has 0 bytes");

  check_bad_shard(dir + "/missing.bin", "No such file");
}

TEST_CASE("file patterns: missing files, empty globs and duplicates are InputErrors") {
  const std::string dir = scratch_dir("glob");
  write_text_file(dir + "/b_1.bin", "");
  write_text_file(dir + "/a_2.bin", "");
  write_text_file(dir + "/a_1.bin", "");
  CHECK(expand_glob(dir + "/a_*.bin") == std::vector<std::string>{dir + "/a_1.bin", dir + "/a_2.bin"});
  CHECK(expand_glob_list(dir + "/b_*.bin," + dir + "/a_1.bin") ==
        std::vector<std::string>{dir + "/b_1.bin", dir + "/a_1.bin"});
  CHECK_THROWS_WITH_AS(expand_glob(dir + "/c_*.bin"),
                       doctest::Contains(("no file matches the pattern '" + dir + "/c_*.bin'").c_str()),
                       NoFileError);
  CHECK_THROWS_WITH_AS(expand_glob(dir + "/nope.bin"),
                       doctest::Contains(("file '" + dir + "/nope.bin' not found").c_str()), NoFileError);
  // A folder that does not exist is named (glob(3) itself only says it stopped).
  CHECK_THROWS_WITH_AS(expand_glob(dir + "/none/deeper/c_*.bin"),
                       doctest::Contains(("no file matches the pattern '" + dir + "/none/deeper/c_*.bin': the folder '" +
                                          dir + "/none' does not exist")
                                             .c_str()),
                       NoFileError);
  // A relative pattern says which folder it was read from.
  CHECK_THROWS_WITH_AS(expand_glob("no-such-folder-here/c_*.bin"),
                       doctest::Contains(("no file matches the pattern 'no-such-folder-here/c_*.bin' (from the working "
                                          "directory '" + std::filesystem::current_path().string() +
                                          "'): the folder 'no-such-folder-here' does not exist")
                                             .c_str()),
                       NoFileError);
  // A file where the pattern wants a folder is named too; a wildcard folder without the named
  // folder below it is no match.
  CHECK_THROWS_WITH_AS(expand_glob(dir + "/a_1.bin/x/c_*.bin"),
                       doctest::Contains(("no file matches the pattern '" + dir + "/a_1.bin/x/c_*.bin': '" + dir +
                                          "/a_1.bin' is a regular file, not a folder")
                                             .c_str()),
                       NoFileError);
  CHECK_THROWS_WITH_AS(expand_glob(dir + "/*/none/c_*.bin"),
                       doctest::Contains(("no file matches the pattern '" + dir + "/*/none/c_*.bin'").c_str()),
                       NoFileError);
  CHECK_THROWS_WITH_AS(expand_glob_list(dir + "/a_*.bin," + dir + "/a_1.bin"),
                       doctest::Contains("matched twice"), InputError);
  CHECK_THROWS_AS(expand_glob_list(dir + "/a_1.bin,"), InputError);
  CHECK_THROWS_AS(expand_glob(dir), InputError);  // a directory is not a shard
}
