// `trainer data prepare | inspect | encode | decode` as a program: output, exit codes, and
// that a bad input exits 2 naming the file (the library is tested in tests/data/).
#include <doctest/doctest.h>

#include <string>

#include "tests/data/data_test_util.h"
#include "tests/support/test_util.h"
#include "tests/support/trainer_binary.h"

using namespace trainer;
using namespace trainer::testing;

TEST_CASE("data CLI: prepare, inspect and encode work, bad input exits 2 naming the file") {
  const std::string dir = scratch_dir("data_cli");
  write_corpus(dir);
  const std::string exe = trainer_exe();
  RunResult r = run_command(exe + " data prepare --tokenizer byte --input '" + dir +
                            "/*.txt' --out " + dir + "/out --val-fraction 0.1 --quiet");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("documents: 20 (18 train, 2 val") != std::string::npos);
  CHECK(r.output.find(dir + "/out/train_000000.bin") != std::string::npos);

  r = run_command(exe + " data inspect " + dir + "/out/train_000000.bin --tokenizer byte "
                  "--seq-len 16 --global-batch 4");
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("18 documents (BOS 256 '<|endoftext|>')") != std::string::npos);
  r = run_command(exe + " data inspect " + dir + "/out/val_000000.bin --seq-len 64 "
                  "--global-batch 1000");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("fewer than one global batch") != std::string::npos);
  CHECK(r.output.find("val_000000.bin") != std::string::npos);

  r = run_command(exe + " data prepare --tokenizer byte --input " + dir + "/nope.txt --out " +
                  dir + "/out2");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find(dir + "/nope.txt") != std::string::npos);

  RawShard bad;
  bad.tokens.assign(10, 1);
  bad.version = 3;
  bad.write(dir + "/bad.bin");
  r = run_command(exe + " data inspect " + dir + "/bad.bin");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find(dir + "/bad.bin") != std::string::npos);
  r = run_command(exe + " data inspect '" + dir + "/*.nothing'");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("*.nothing") != std::string::npos);

  r = run_command(exe + " data prepare --tokenizer gpt3 --input x --out y");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("valid: gpt2, byte") != std::string::npos);

  r = run_command("cd " + source_dir() + " && " + exe +
                  " data encode 'Hello world, this is GPT-2.'");
  CHECK_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output == "15496 995 11 428 318 402 11571 12 17 13\n");
  r = run_command(exe + " data decode --tokenizer byte 72 105 256");
  CHECK(r.output == "Hi<|endoftext|>");
  r = run_command(exe + " data prepare --help");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("--val-fraction") != std::string::npos);
}

TEST_CASE("data CLI: a bad jsonl line exits 2 naming file and line, --skip-bad-lines reports the count") {
  const std::string dir = scratch_dir("data_cli_jsonl");
  write_text_file(dir + "/c.jsonl", "{\"text\": \"one\"}\n{\"body\": \"two\"}\n{\"text\": \"three\"}\n");
  const std::string exe = trainer_exe();
  const std::string base = exe + " data prepare --tokenizer byte --input " + dir + "/c.jsonl --out " +
                           dir + "/out --val-fraction 0";
  RunResult r = run_command(base);
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(r.output.find(dir + "/c.jsonl:2: no field 'text'") != std::string::npos, r.output);
  r = run_command(base + " --skip-bad-lines");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("skipped 1 bad JSONL line(s)") != std::string::npos);
  CHECK(r.output.find("documents: 2 (2 train, 0 val") != std::string::npos);
  CHECK(r.output.find("tokenizing") == std::string::npos);  // not a terminal: no progress
  r = run_command(base + " --text-field body --progress");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find(dir + "/c.jsonl:1: no field 'body' (--text-field body)") != std::string::npos);
  r = run_command(base + " --skip-bad-lines --progress");
  CHECK(r.exit_code == 0);
  CHECK_MESSAGE(r.output.find("tokenizing: 100% (") != std::string::npos, r.output);
}
