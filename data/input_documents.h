// The inputs of `data prepare` and the documents in them.
// An input is a file, a glob pattern (file_glob.h) or a directory (every regular file below it
// whose format is known, recursively, sorted by path). A file's format comes from its name,
// after an optional .gz or .zst (line_reader.h):
//   *.jsonl, *.json  JSON Lines: one JSON object per line, the document is the string at
//                    text_field ("a.b" walks nested objects); blank lines are no documents
//   anything else    plain text, split into documents at runs of doc_blank_lines blank lines
//                    exactly as split_documents (documents.h) does
// A JSONL line that is not JSON, not an object, or lacks a string at text_field is an
// InputError "FILE:LINE: ..." unless bad_lines is skip: then it is counted (skipped_lines)
// and the caller reports the count. An empty string at the field is an empty document.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/documents.h"
#include "data/line_reader.h"

namespace trainer {

enum class InputFormat { text, jsonl };
enum class BadLines { fail, skip };

InputFormat format_of(const std::string& path);

struct InputFile {
  std::string path;
  InputFormat format = InputFormat::text;
  int64_t bytes = 0;  // on disk (compressed)
  int64_t mtime_ns = 0;  // for the resume fingerprint
};

// In input order, each pattern's or directory's files sorted; a file named twice is an
// InputError. Missing files, empty globs and directories without inputs are InputErrors.
std::vector<InputFile> expand_inputs(const std::vector<std::string>& inputs);

struct DocumentOptions {
  int doc_blank_lines = 3;
  std::string text_field = "text";
  BadLines bad_lines = BadLines::fail;
};

// Streams the documents of one file in order.
class DocumentReader {
 public:
  DocumentReader(const InputFile& file, const DocumentOptions& options);
  // The next document's text; false at the end of the file.
  bool next(std::string* text);
  int64_t skipped_lines() const { return skipped_; }
  int64_t compressed_bytes_read() const { return lines_.compressed_bytes_read(); }

 private:
  bool next_json(std::string* text);
  bool next_text(std::string* text);
  InputFile file_;
  DocumentOptions options_;
  std::vector<std::string> field_path_;
  LineReader lines_;
  BlankLineSplitter splitter_;
  bool lines_done_ = false;
  int64_t skipped_ = 0;
};

}  // namespace trainer
