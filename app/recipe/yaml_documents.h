// Reading YAML text that should hold one document, without yaml-cpp 0.7's LoadAll: after a
// stray flow token at the top level (",1", "[1],") its parser stops advancing, and LoadAll
// appends empty documents until memory runs out (found by fuzz_recipe). Here at most three
// documents are scanned, and one that starts where the previous one did is a syntax error.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace trainer {

struct YamlDocuments {
  int count = 0;       // 0, 1, or 2 meaning "two or more"
  YAML::Node first;    // the first document (when count >= 1)
  YAML::Mark second;   // where the second document's first node is (when count == 2)
};

// Throws YAML::Exception for a syntax error, with its mark: yaml-cpp's own, or "unexpected
// 'c'" where the parser stopped advancing.
YamlDocuments read_yaml_documents(const std::string& text);

}  // namespace trainer
