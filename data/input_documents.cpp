// Input expansion and per-file document streams for `data prepare` (see input_documents.h).
#include "data/input_documents.h"

#include <fmt/core.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "data/file_glob.h"
#include "data/json_value.h"
#include "kernels/base/errors.h"

namespace trainer {
namespace fs = std::filesystem;

InputFormat format_of(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (const char* ext : {".gz", ".zst"}) {
    const std::string e(ext);
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0)
      name.resize(name.size() - e.size());
  }
  for (const char* ext : {".jsonl", ".json"}) {
    const std::string e(ext);
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0)
      return InputFormat::jsonl;
  }
  return InputFormat::text;
}

namespace {

InputFile describe(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw InputError(fmt::format("data prepare: input '{}' is not a readable regular file", path));
  InputFile f;
  f.path = path;
  f.format = format_of(path);
  f.bytes = static_cast<int64_t>(st.st_size);
  f.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return f;
}

// Every regular file below dir, sorted; hidden files and folders (.staging, .git) are left out.
std::vector<std::string> files_below(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec), end;
  if (ec) throw InputError(fmt::format("data prepare: cannot list input directory '{}': {}", dir, ec.message()));
  for (; it != end; it.increment(ec)) {
    if (ec) throw InputError(fmt::format("data prepare: cannot list input directory '{}': {}", dir, ec.message()));
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file()) out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) throw InputError(fmt::format("data prepare: input directory '{}' holds no files", dir));
  return out;
}

std::vector<std::string> split_path(const std::string& key) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  for (const std::string& p : parts)
    if (p.empty())
      throw ConfigError(fmt::format("data prepare: --text-field '{}' has an empty key; give KEY or "
                                    "KEY.SUBKEY...", key));
  return parts;
}

}  // namespace

std::vector<InputFile> expand_inputs(const std::vector<std::string>& inputs) {
  std::vector<InputFile> files;
  std::set<std::string> seen;
  for (const std::string& input : inputs) {
    std::error_code ec;
    const std::vector<std::string> paths =
        fs::is_directory(input, ec) ? files_below(input) : expand_glob(input);
    for (const std::string& p : paths) {
      if (!seen.insert(fs::weakly_canonical(p, ec).string()).second)
        throw InputError(fmt::format("data prepare: input '{}' is named twice (by '{}'); its "
                                     "documents would count twice", p, input));
      files.push_back(describe(p));
    }
  }
  return files;
}

DocumentReader::DocumentReader(const InputFile& file, const DocumentOptions& options)
    : file_(file), options_(options), field_path_(split_path(options.text_field)),
      lines_(file.path), splitter_(options.doc_blank_lines) {}

bool DocumentReader::next(std::string* text) {
  return file_.format == InputFormat::jsonl ? next_json(text) : next_text(text);
}

bool DocumentReader::next_text(std::string* text) {
  std::string_view line;
  while (!lines_done_) {
    if (!lines_.next(&line)) {
      lines_done_ = true;
      return splitter_.finish(text);
    }
    if (splitter_.feed(line, text)) return true;
  }
  return false;
}

bool DocumentReader::next_json(std::string* text) {
  std::string_view line;
  while (lines_.next(&line)) {
    const std::string_view body = line.substr(0, line.find_last_not_of("\r\n") + 1);
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) continue;  // blank line
    std::string problem;
    try {
      const JsonValue v = parse_json(body, "");
      const JsonValue* at = &v;
      std::string walked;
      for (const std::string& key : field_path_) {
        if (at->kind != JsonKind::object) {
          problem = fmt::format("'{}' is {}, not an object (--text-field {})",
                                walked.empty() ? "the line" : walked, json_kind_name(at->kind),
                                options_.text_field);
          break;
        }
        walked += (walked.empty() ? "" : ".") + key;
        at = at->find(key);
        if (!at) {
          problem = fmt::format("no field '{}' (--text-field {})", walked, options_.text_field);
          break;
        }
      }
      if (problem.empty() && at->kind != JsonKind::string)
        problem = fmt::format("field '{}' is {}, not a string", options_.text_field, json_kind_name(at->kind));
      if (problem.empty()) {
        *text = at->text;
        return true;
      }
    } catch (const InputError& e) {  // ":1:COL: what" from parse_json: the column is kept
      std::string msg = e.what();
      if (msg.rfind(":1:", 0) == 0) msg = msg.substr(3);
      problem = "not valid JSON: column " + msg;
    }
    if (options_.bad_lines == BadLines::fail)
      throw InputError(fmt::format("{}:{}: {} (--skip-bad-lines skips such lines, counting them)",
                                   file_.path, lines_.line_number(), problem));
    ++skipped_;
  }
  return false;
}

}  // namespace trainer
