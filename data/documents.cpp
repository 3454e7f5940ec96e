// Document splitting at runs of blank lines (see documents.h).
#include "data/documents.h"

#include <utility>

namespace trainer {
namespace {

bool is_blank(std::string_view line) {
  for (char c : line)
    if (c != ' ' && c != '\t' && c != '\r' && c != '\n' && c != '\v' && c != '\f')
      return false;
  return true;
}

}  // namespace

bool BlankLineSplitter::emit(std::string* doc, size_t* offset) {
  const bool any = has_text_;
  if (any) {
    *doc = std::move(doc_);
    if (offset) *offset = doc_offset_;
  }
  doc_.clear();
  pending_.clear();
  has_text_ = false;
  return any;
}

bool BlankLineSplitter::feed(std::string_view line, std::string* doc, size_t* offset) {
  const size_t at = stream_pos_;
  stream_pos_ += line.size();
  if (blank_lines_ <= 0) {  // the whole stream, verbatim
    if (doc_.empty() && !has_text_) doc_offset_ = at;
    doc_.append(line);
    has_text_ = has_text_ || !is_blank(line);
    return false;
  }
  if (is_blank(line)) {
    if (has_text_) pending_.append(line);
    return ++blanks_ == blank_lines_ && emit(doc, offset);
  }
  if (!has_text_) doc_offset_ = at;
  doc_.append(pending_);
  pending_.clear();
  doc_.append(line);
  has_text_ = true;
  blanks_ = 0;
  return false;
}

bool BlankLineSplitter::finish(std::string* doc, size_t* offset) { return emit(doc, offset); }

std::vector<DocumentSpan> split_documents(std::string_view text, int blank_lines) {
  std::vector<DocumentSpan> docs;
  BlankLineSplitter splitter(blank_lines);
  std::string doc;
  size_t offset = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t eol = text.find('\n', pos);
    const size_t end = eol == std::string_view::npos ? text.size() : eol + 1;
    if (splitter.feed(text.substr(pos, end - pos), &doc, &offset)) docs.push_back({offset, doc.size()});
    pos = end;
  }
  if (splitter.finish(&doc, &offset)) docs.push_back({offset, doc.size()});
  return docs;
}

}  // namespace trainer
