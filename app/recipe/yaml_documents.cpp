// One YAML document, read without LoadAll (see yaml_documents.h).
#include "app/recipe/yaml_documents.h"

#include <yaml-cpp/eventhandler.h>

#include <optional>
#include <sstream>
#include <vector>

namespace trainer {
namespace {

// Records where each document's first node is; nothing else is kept.
class FirstNodeMark : public YAML::EventHandler {
 public:
  std::optional<YAML::Mark> mark;

  void OnDocumentStart(const YAML::Mark&) override { mark.reset(); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { note(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { note(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { note(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    note(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    note(m);
  }
  void OnMapEnd() override {}

 private:
  void note(const YAML::Mark& m) {
    if (!mark) mark = m;
  }
};

}  // namespace

YamlDocuments read_yaml_documents(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  FirstNodeMark handler;
  std::vector<YAML::Mark> starts;
  // Three are enough to tell one document from several and to see a parser that is stuck on
  // the token after the second.
  while (starts.size() < 3 && parser.HandleNextDocument(handler)) {
    const YAML::Mark m = handler.mark.value_or(YAML::Mark::null_mark());
    if (!starts.empty() && m.pos == starts.back().pos) {
      const bool printable = m.pos >= 0 && size_t(m.pos) < text.size() && text[size_t(m.pos)] > ' ' &&
                             text[size_t(m.pos)] < 0x7f;
      throw YAML::ParserException(m, printable ? std::string("unexpected '") + text[size_t(m.pos)] + "'"
                                               : std::string("unexpected input"));
    }
    starts.push_back(m);
  }
  YamlDocuments docs;
  docs.count = starts.size() < 2 ? int(starts.size()) : 2;
  if (docs.count >= 1) docs.first = YAML::Load(text);
  if (docs.count == 2) docs.second = starts[1];
  return docs;
}

}  // namespace trainer
