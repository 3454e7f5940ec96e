// Refusing output targets that are not files or lie inside a checkpoint (see output_target.h).
#include "kernels/base/output_target.h"

#include <sys/stat.h>

#include <filesystem>

#include "kernels/base/errors.h"
#include "kernels/base/regular_file.h"

namespace trainer {

namespace fs = std::filesystem;

namespace {

// "step_" and eight digits: the checkpoint writer's folder names.
bool is_step_name(const std::string& name) {
  if (name.size() != 13 || name.compare(0, 5, "step_") != 0) return false;
  return name.find_first_not_of("0123456789", 5) == std::string::npos;
}

bool is_regular(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::string non_regular_target_problem(const std::string& path) {
  struct stat st {};
  // A missing target, or a dangling link (rename replaces the link itself), is a new file.
  if (::stat(path.c_str(), &st) != 0 || S_ISREG(st.st_mode)) return "";
  return "it exists and is not a regular file (" + describe_path_kind(path) +
         "); only a missing path or a regular file is written (replaced whole)";
}

bool is_checkpoint_step_dir(const std::string& dir) {
  const fs::path p(dir);
  return is_step_name(p.filename().string()) && is_regular(p / "manifest.yaml");
}

bool is_checkpoint_root_dir(const std::string& dir) {
  std::error_code ec;
  if (is_regular(fs::path(dir) / "latest")) return true;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec))
    if (is_step_name(it->path().filename().string()) && is_checkpoint_step_dir(it->path().string())) return true;
  return false;
}

std::string checkpoint_dir_problem(const std::string& dir) {
  std::error_code ec;
  const std::string resolved = fs::weakly_canonical(fs::path(dir.empty() ? "." : dir), ec).string();
  if (ec) return "";  // the directory cannot be resolved: creating the file will say why
  if (is_checkpoint_step_dir(resolved))
    return "'" + resolved +
           "' is a checkpoint (it holds manifest.yaml); writing there could replace its own files; write "
           "outside the checkpoint directory";
  if (is_checkpoint_root_dir(resolved))
    return "'" + resolved +
           "' is a checkpoint directory (it holds latest or step_NNNNNNNN checkpoints), which only the "
           "checkpoint writer writes; write outside it";
  return "";
}

void check_output_target(const std::string& path, const std::string& what) {
  const std::string prefix = "cannot write " + what + " '" + path + "': ";
  std::string problem = non_regular_target_problem(path);
  if (problem.empty()) {
    const fs::path target(path);
    problem = checkpoint_dir_problem(target.has_parent_path() ? target.parent_path().string() : ".");
  }
  if (!problem.empty()) throw InputError(prefix + problem);
}

void create_parent_folders(const std::string& path, const std::string& what) {
  const fs::path parent = fs::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  if (fs::is_directory(parent, ec)) return;
  fs::create_directories(parent, ec);
  if (ec || !fs::is_directory(parent))
    throw InputError("cannot write " + what + " '" + path + "': cannot create its folder '" + parent.string() +
                     "': " + (ec ? ec.message() : std::string("something else of that name is in the way")) +
                     "; valid: a path whose parent is a folder or can be made one");
}

}  // namespace trainer
