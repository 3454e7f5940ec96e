// Pattern expansion with POSIX glob(3) (see file_glob.h).
#include "data/file_glob.h"

#include <glob.h>
#include <sys/stat.h>

#include <fmt/core.h>

#include <set>

#include "kernels/base/errors.h"
#include "kernels/base/excerpt.h"
#include "kernels/base/regular_file.h"

namespace trainer {
namespace {

bool has_wildcard(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

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
      throw InputError(fmt::format("file '{}' not found", excerpt(pattern)));
    if (!S_ISREG(st.st_mode))
      throw InputError(fmt::format("'{}' is {}, not a regular file", excerpt(pattern), describe_path_kind(pattern)));
    return {pattern};
  }
  GlobResult r;
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, nullptr, &r.g);
  if (rc == GLOB_NOMATCH || (rc == 0 && r.g.gl_pathc == 0))
    throw InputError(fmt::format("no file matches the pattern '{}'", excerpt(pattern)));
  if (rc == GLOB_NOSPACE) throw std::bad_alloc();
  if (rc != 0)
    throw InputError(fmt::format("cannot read a directory while expanding the pattern '{}'",
                                 excerpt(pattern)));
  // Everything a pattern matches must be a shard: a directory, FIFO or broken link among the
  // matches is a mistake worth stopping for, not something to skip in silence.
  std::vector<std::string> files;
  for (size_t i = 0; i < r.g.gl_pathc; ++i) {
    struct stat st {};
    const std::string path = r.g.gl_pathv[i];
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
