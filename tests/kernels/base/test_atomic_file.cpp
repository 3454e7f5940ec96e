// The one atomic file writer (kernels/base/atomic_file.h): the new contents replace the old
// whole, no temporary file is left behind, any failure (the writer's own, or the caller's body
// throwing) leaves the old file as it was, and the writer's failures are InputErrors naming the
// target and the step that failed. OutputFile reports a failed write with the system's reason.
#include <doctest/doctest.h>

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/base/atomic_file.h"
#include "kernels/base/errors.h"
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

TEST_CASE("atomic file: a missing directory is an InputError naming the file and the step") {
  const std::string dir = scratch_dir("atomic_file_no_dir");
  const std::string path = dir + "/missing/out.bin";
  const std::string what = input_error_of([&] { write_file_atomically(path, "token shard", std::string_view("x")); });
  CHECK(what.find("cannot write token shard '" + path + "': cannot create " + dir + "/missing/.out.bin.tmp.") == 0);
  CHECK(what.find("No such file or directory") != std::string::npos);
}

TEST_CASE("atomic file: a failed rename keeps the target and removes the temporary") {
  const std::string dir = scratch_dir("atomic_file_rename");
  const std::string path = dir + "/taken";
  std::filesystem::create_directories(path + "/inside");
  const std::string what = input_error_of([&] { write_file_atomically(path, "test file", std::string_view("x")); });
  CHECK(what.find("cannot write test file '" + path + "': cannot rename " + dir + "/.taken.tmp.") == 0);
  CHECK(std::filesystem::is_directory(path + "/inside"));
  CHECK(names_in(dir) == std::vector<std::string>{"taken"});
}

TEST_CASE("output file: a failed write names the file and the system's reason") {
  OutputFile full("/dev/full");
  const std::string what = input_error_of([&] { full.write("x", 1); });
  CHECK(what == "cannot write /dev/full: No space left on device");
  CHECK(input_error_of([] { OutputFile f("/nonexistent-dir/file"); }) ==
        "cannot create /nonexistent-dir/file: No such file or directory");
  CHECK(input_error_of([] { sync_directory("/nonexistent-dir"); }) ==
        "cannot open /nonexistent-dir: No such file or directory");
}
