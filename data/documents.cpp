// Document splitting at runs of blank lines (see documents.h).
#include "data/documents.h"

namespace trainer {
namespace {

bool is_blank(std::string_view line) {
  for (char c : line)
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\v' && c != '\f')
      return false;
  return true;
}

}  // namespace

std::vector<DocumentSpan> split_documents(std::string_view text, int blank_lines) {
  std::vector<DocumentSpan> docs;
  if (blank_lines <= 0) {
    if (!is_blank(text)) docs.push_back({0, text.size()});
    return docs;
  }
  constexpr size_t kNone = static_cast<size_t>(-1);
  size_t doc_start = kNone, doc_end = 0;  // open document: [doc_start, doc_end)
  int blanks = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    const size_t line_end = eol == std::string_view::npos ? text.size() : eol + 1;
    const std::string_view line = text.substr(pos, line_end - pos);
    if (is_blank(line)) {
      if (++blanks == blank_lines && doc_start != kNone) {
        docs.push_back({doc_start, doc_end - doc_start});
        doc_start = kNone;
      }
    } else {
      if (doc_start == kNone) doc_start = pos;
      doc_end = line_end;
      blanks = 0;
    }
    pos = line_end;
  }
  if (doc_start != kNone) docs.push_back({doc_start, doc_end - doc_start});
  return docs;
}

}  // namespace trainer
