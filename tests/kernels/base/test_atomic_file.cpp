// The one atomic file writer (kernels/base/atomic_file.h): the new contents replace the old
// whole, no temporary file is left behind, any failure (the writer's own, or the caller's body
// throwing) leaves the old file as it was, and the writer's failures are InputErrors naming the
// target and the step that failed. OutputFile reports a failed write with the system's reason.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <csignal>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/base/atomic_file.h"
#include "kernels/base/errors.h"
#include "kernels/base/output_target.h"
#include "tests/support/test_util.h"

using namespace trainer;
using namespace trainer::testing;

namespace {

std::vector<std::string> names_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  return out;
}

std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("atomic file: writes the parts in order, replaces an old file, leaves no temporary") {
  const std::string dir = scratch_dir("atomic_file_write");
  const std::string path = dir + "/out.bin";
  write_text_file(path, "old contents, longer than the new ones");
  write_file_atomically(path, "test file", [](const AtomicWriteFn& write) {
    write("ab", 2);
    write("", 0);
    write("cde", 3);
  });
  CHECK(read_text_file(path) == "abcde");
  write_file_atomically(path, "test file", std::string_view("whole"));
  CHECK(read_text_file(path) == "whole");
  CHECK(names_in(dir) == std::vector<std::string>{"out.bin"});
}

TEST_CASE("atomic file: a body that throws leaves the old file and its exception unchanged") {
  const std::string dir = scratch_dir("atomic_file_body_throws");
  const std::string path = dir + "/out.bin";
  write_text_file(path, "old");
  auto body = [](const AtomicWriteFn& write) {
    write("partial", 7);
    throw std::logic_error("body failed");
  };
  CHECK_THROWS_WITH_AS(write_file_atomically(path, "test file", body), "body failed", std::logic_error);
  CHECK(read_text_file(path) == "old");
  CHECK(names_in(dir) == std::vector<std::string>{"out.bin"});
}

TEST_CASE("atomic file: a missing directory is created for an output, an InputError for the checkpoint writer") {
  const std::string dir = scratch_dir("atomic_file_no_dir");
  // Outputs follow output_target.h's one rule: missing parents are created.
  write_file_atomically(dir + "/missing/deeper/out.bin", "token shard", std::string_view("x"));
  CHECK(read_text_file(dir + "/missing/deeper/out.bin") == "x");
  // A regular file where a parent folder should be: named, with the reason.
  write_text_file(dir + "/file", "in the way");
  std::string what = input_error_of([&] { write_file_atomically(dir + "/file/sub/out.bin", "token shard", std::string_view("x")); });
  CHECK(what.find("cannot write token shard '" + dir + "/file/sub/out.bin': cannot create its folder '" + dir + "/file/sub'") == 0);
  CHECK(read_text_file(dir + "/file") == "in the way");
  // The checkpoint writer makes its own folders first: a missing one there is a failed step.
  const std::string path = dir + "/absent/out.bin";
  what = input_error_of([&] { write_checkpoint_file_atomically(path, "token shard", std::string_view("x")); });
  CHECK(what.find("cannot write token shard '" + path + "': cannot create " + dir + "/absent/.out.bin.tmp.") == 0);
  CHECK(what.find("No such file or directory") != std::string::npos);
}

TEST_CASE("atomic file: a directory in the target's place is kept and no temporary is made") {
  const std::string dir = scratch_dir("atomic_file_rename");
  const std::string path = dir + "/taken";
  std::filesystem::create_directories(path + "/inside");
  const std::string what = input_error_of([&] { write_file_atomically(path, "test file", std::string_view("x")); });
  CHECK(what == "cannot write test file '" + path +
                    "': it exists and is not a regular file (a directory); only a missing path or a regular file is "
                    "written (replaced whole)");
  CHECK(std::filesystem::is_directory(path + "/inside"));
  CHECK(names_in(dir) == std::vector<std::string>{"taken"});
}

TEST_CASE("output file: a failed write names the file and the system's reason") {
  // A write beyond the file size limit fails with EFBIG, as a write to a full disk fails with
  // ENOSPC: both come back from write(2), which is what this checks (SIGXFSZ is ignored so the
  // process gets the error instead of dying).
  const std::string path = scratch_dir("output_file_write") + "/big.bin";
  struct rlimit old {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
  void (*old_handler)(int) = std::signal(SIGXFSZ, SIG_IGN);
  const bool handler_set = old_handler != SIG_ERR;
  REQUIRE(handler_set);
  std::string what;
  {
    OutputFile file(path);
    struct rlimit small = old;
    small.rlim_cur = 4;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    what = input_error_of([&] { file.write("0123456789", 10); });
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &old) == 0);
  }
  const bool handler_restored = std::signal(SIGXFSZ, old_handler) != SIG_ERR;
  REQUIRE(handler_restored);
  CHECK(what == "cannot write " + path + ": File too large");
  CHECK(input_error_of([] { OutputFile f("/nonexistent-dir/file"); }) ==
        "cannot create /nonexistent-dir/file: No such file or directory");
  CHECK(input_error_of([] { sync_directory("/nonexistent-dir"); }) ==
        "cannot open /nonexistent-dir: No such file or directory");
}

namespace {

// One refused target: how to make it in a scratch directory, then the path to write and the
// end of the message.
struct RefusedTarget {
  const char* name;
  std::function<std::string(const std::string& dir)> make;  // returns the path to write
  const char* says;
};

// A checkpoint as the checkpoint writer leaves it: DIR/ckpt/step_00000002/{manifest.yaml,
// rank_00000.bin} and DIR/ckpt/latest.
std::string make_checkpoint(const std::string& dir) {
  const std::string step = dir + "/ckpt/step_00000002";
  std::filesystem::create_directories(step);
  write_text_file(step + "/manifest.yaml", "manifest\n");
  write_text_file(step + "/rank_00000.bin", "weights");
  write_text_file(dir + "/ckpt/latest", "step_00000002\n");
  return step;
}

const RefusedTarget kRefusedTargets[] = {
    {"dev_null", [](const std::string&) { return std::string("/dev/null"); }, "(a character device)"},
    {"dev_full", [](const std::string&) { return std::string("/dev/full"); }, "(a character device)"},
    {"fifo",
     [](const std::string& d) {
       REQUIRE(::mkfifo((d + "/pipe").c_str(), 0644) == 0);
       return d + "/pipe";
     },
     "(a FIFO)"},
    {"link_to_device",
     [](const std::string& d) {
       std::filesystem::create_symlink("/dev/zero", d + "/zero.bin");
       return d + "/zero.bin";
     },
     "(a character device)"},
    {"rank_file", [](const std::string& d) { return make_checkpoint(d) + "/rank_00000.bin"; },
     "is a checkpoint (it holds manifest.yaml)"},
    {"manifest", [](const std::string& d) { return make_checkpoint(d) + "/manifest.yaml"; },
     "is a checkpoint (it holds manifest.yaml)"},
    {"new_file_in_checkpoint", [](const std::string& d) { return make_checkpoint(d) + "/model.bin"; },
     "is a checkpoint (it holds manifest.yaml)"},
    {"checkpoint_latest",
     [](const std::string& d) {
       make_checkpoint(d);
       return d + "/ckpt/latest";
     },
     "is a checkpoint directory (it holds latest or step_NNNNNNNN checkpoints)"},
    {"dot_dot_into_checkpoint",
     [](const std::string& d) {
       make_checkpoint(d);
       std::filesystem::create_directories(d + "/other");
       return d + "/other/../ckpt/step_00000002/rank_00000.bin";
     },
     "is a checkpoint (it holds manifest.yaml)"},
    {"link_to_checkpoint",
     [](const std::string& d) {
       std::filesystem::create_directory_symlink(make_checkpoint(d), d + "/alias");
       return d + "/alias/manifest.yaml";
     },
     "is a checkpoint (it holds manifest.yaml)"},
    {"checkpoint_dir_without_latest",
     [](const std::string& d) {
       make_checkpoint(d);
       std::filesystem::remove(d + "/ckpt/latest");
       return d + "/ckpt/model.safetensors";
     },
     "is a checkpoint directory"},
};

}  // namespace

TEST_CASE("atomic file: targets that are not files or lie inside a checkpoint are refused, nothing changes") {
  for (const RefusedTarget& row : kRefusedTargets) {
    CAPTURE(row.name);
    const std::string dir = scratch_dir(std::string("atomic_file_refused_") + row.name);
    const std::string path = row.make(dir);
    const std::string before = std::filesystem::is_regular_file(path) ? read_text_file(path) : "";
    const std::string what =
        input_error_of([&] { write_file_atomically(path, "test file", std::string_view("new contents")); });
    CHECK(what.find("cannot write test file '" + path + "': ") == 0);
    CHECK(what.find(row.says) != std::string::npos);
    if (!before.empty()) CHECK(read_text_file(path) == before);
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
      CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
  }
  CHECK(std::filesystem::is_character_file("/dev/null"));
  CHECK(std::filesystem::is_character_file("/dev/full"));
}

TEST_CASE("output file: a device or a FIFO is refused without being opened for writing or waited on") {
  const std::string dir = scratch_dir("output_file_refused");
  REQUIRE(::mkfifo((dir + "/pipe").c_str(), 0644) == 0);
  CHECK(input_error_of([] { OutputFile f("/dev/full"); }) ==
        "cannot create /dev/full: it exists and is not a regular file (a character device); only a missing path or a "
        "regular file is written (replaced whole)");
  CHECK(input_error_of([&] { OutputFile f(dir + "/pipe"); }).find("(a FIFO)") != std::string::npos);
}

TEST_CASE("atomic file: the checkpoint writer's own latest, and files beside a checkpoint directory, are written") {
  const std::string dir = scratch_dir("atomic_file_checkpoint_own");
  make_checkpoint(dir);
  write_checkpoint_file_atomically(dir + "/ckpt/latest", "checkpoint pointer", std::string_view("step_00000004\n"));
  CHECK(read_text_file(dir + "/ckpt/latest") == "step_00000004\n");
  write_file_atomically(dir + "/model.bin", "test file", std::string_view("beside"));
  CHECK(read_text_file(dir + "/model.bin") == "beside");
  // A folder merely named like a checkpoint, without a manifest, is an ordinary folder.
  std::filesystem::create_directories(dir + "/plain/step_00000001");
  write_file_atomically(dir + "/plain/step_00000001/x.bin", "test file", std::string_view("x"));
  CHECK(read_text_file(dir + "/plain/step_00000001/x.bin") == "x");
  CHECK_FALSE(is_checkpoint_root_dir(dir + "/plain"));
  CHECK(is_checkpoint_root_dir(dir + "/ckpt"));
  CHECK(is_checkpoint_step_dir(dir + "/ckpt/step_00000002"));
}
