// Pattern expansion with POSIX glob(3) (see file_glob.h).
#include "data/file_glob.h"

#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/core.h>

#include <algorithm>
#include <set>

#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"
#include "kernels/base/regular_file.h"

namespace trainer {
namespace {

bool has_wildcard(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

// The first of the folders a pattern names before its first wildcard that is missing, is not
// a folder or cannot be read (glob(3) itself only says that it stopped, or that nothing matched).
struct FolderProblem {
  std::string why;  // empty: every such folder can be read
  bool missing = false;  // nothing there (missing, or a file where a folder belongs)
};

FolderProblem fixed_folder_problem(const std::string& pattern) {
  const size_t slash = pattern.rfind('/', pattern.find_first_of("*?["));
  const std::string fixed = slash == std::string::npos ? std::string() : pattern.substr(0, slash);
  size_t end = fixed.empty() ? std::string::npos : 0;
  while (end != std::string::npos) {
    end = fixed.find('/', end + 1);
    const std::string folder = fixed.substr(0, end);
    struct stat st {};
    if (::stat(folder.c_str(), &st) != 0) {
      const int err = errno;
      if (err == ENOENT) return {fmt::format("the folder '{}' does not exist", excerpt(folder)), true};
      return {fmt::format("the folder '{}' cannot be read: {}", excerpt(folder), std::strerror(err)), false};
    }
    if (!S_ISDIR(st.st_mode))
      return {fmt::format("'{}' is {}, not a folder", excerpt(folder), describe_path_kind(folder)), true};
    if (::access(folder.c_str(), R_OK | X_OK) != 0) {
      const int err = errno;
      return {fmt::format("the folder '{}' cannot be read: {}", excerpt(folder), std::strerror(err)), false};
    }
  }
  return {};
}

// " (from the working directory W)" for a relative path: a run started from another folder
// is the usual reason why a recipe's relative data paths find nothing.
std::string relative_to(const std::string& path) {
  if (path.empty() || path[0] == '/') return "";
  std::error_code ec;
  const std::filesystem::path cwd = std::filesystem::current_path(ec);
  return ec ? "" : fmt::format(" (from the working directory '{}')", excerpt(cwd.string()));
}

[[noreturn]] void throw_no_match(const std::string& pattern, const FolderProblem& p) {
  throw NoFileError(fmt::format("no file matches the pattern '{}'{}{}", excerpt(pattern), relative_to(pattern),
                                p.why.empty() ? "" : ": " + p.why));
}

struct GlobResult {
  glob_t g{};
  ~GlobResult() { globfree(&g); }
};

}  // namespace

std::vector<std::string> expand_glob(const std::string& pattern) {
  if (pattern.empty()) throw InputError("empty file pattern");
  if (!has_wildcard(pattern)) {
    struct stat st {};
    if (::stat(pattern.c_str(), &st) != 0)
      throw NoFileError(fmt::format("file '{}' not found{}", excerpt(pattern), relative_to(pattern)));
    if (!S_ISREG(st.st_mode))
      throw InputError(fmt::format("'{}' is {}, not a regular file", excerpt(pattern), describe_path_kind(pattern)));
    return {pattern};
  }
  GlobResult r;
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &r.g);
  if (rc == GLOB_NOMATCH || (rc == 0 && r.g.gl_pathc == 0)) throw_no_match(pattern, fixed_folder_problem(pattern));
  if (rc == GLOB_NOSPACE) throw std::bad_alloc();
  if (rc != 0) {
    const FolderProblem p = fixed_folder_problem(pattern);
    if (p.missing) throw_no_match(pattern, p);
    throw InputError(fmt::format("cannot expand the pattern '{}': {}", excerpt(pattern),
                                 p.why.empty() ? "a folder its wildcards lead to cannot be read" : p.why));
  }
  // Everything a pattern matches must be a shard: a directory, FIFO or broken link among the
  // matches is a mistake worth stopping for, not something to skip in silence.
  std::vector<std::string> files;
  for (size_t i = 0; i < r.g.gl_pathc; ++i) {
    struct stat st {};
    const std::string path = r.g.gl_pathv[i];
    // Every message about a file names it: a name holding a control character (an escape
    // sequence, a newline) would reach the terminal, so it is refused here, once, escaped.
    if (std::any_of(path.begin(), path.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
      throw InputError(fmt::format("the pattern '{}' matches '{}', whose name holds a control character; valid: "
                                   "file names without them (rename it, or narrow the pattern)",
                                   excerpt(pattern), excerpt(path)));
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      throw InputError(fmt::format("the pattern '{}' matches '{}', which is {}; only regular files can be read "
                                   "(narrow the pattern or move it away)",
                                   excerpt(pattern), path, describe_path_kind(path)));
    files.push_back(path);
  }
  return files;
}

std::vector<std::string> expand_glob_list(const std::string& patterns) {
  std::vector<std::string> files;
  std::set<std::string> seen;
  size_t start = 0;
  while (true) {
    const size_t comma = patterns.find(',', start);
    const std::string one = patterns.substr(start, comma == std::string::npos ? std::string::npos
                                                                              : comma - start);
    if (one.empty())
      throw InputError(fmt::format("empty pattern in the list '{}' (patterns are separated by "
                                   "commas)", excerpt(patterns)));
    for (std::string& f : expand_glob(one)) {
      if (!seen.insert(f).second)
        throw InputError(fmt::format("file '{}' is matched twice by '{}'", f, excerpt(patterns)));
      files.push_back(std::move(f));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return files;
}

}  // namespace trainer
