// Display names of blend sources (see blend_source.h).
#include "data/blend_source.h"

#include <cctype>

namespace trainer {
namespace {

// "data/web/train_*.bin" -> "web": the folder holding the first pattern's files.
std::string folder_name(const std::string& path) {
  const std::string first = path.substr(0, path.find(','));
  const size_t slash = first.rfind('/');
  if (slash == std::string::npos || slash == 0) return "";
  const size_t start = first.rfind('/', slash - 1);
  const size_t from = start == std::string::npos ? 0 : start + 1;
  const std::string folder = first.substr(from, slash - from);
  if (folder == "." || folder == ".." || folder.find_first_of("*?[") != std::string::npos) return "";
  // Names go into metrics keys and progress lines: keep them to [A-Za-z0-9_.-].
  std::string name = folder;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '.' && ch != '-') ch = '_';
  return name;
}

}  // namespace

std::vector<std::string> blend_source_names(const std::vector<BlendSource>& sources) {
  std::vector<std::string> names;
  for (size_t k = 0; k < sources.size(); ++k) {
    std::string name = sources[k].name;
    if (name.empty()) {
      name = folder_name(sources[k].path);
      for (size_t i = 0; i < sources.size() && !name.empty(); ++i)
        if (i != k && (sources[i].name == name || folder_name(sources[i].path) == name)) name.clear();
      if (name.empty()) name = "source" + std::to_string(k);
    }
    names.push_back(name);
  }
  return names;
}

}  // namespace trainer
