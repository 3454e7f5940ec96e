// The shards' tokenizer against the recipe's (see shard_tokenizer_check.h).
#include "app/engine/shard_tokenizer_check.h"

#include <fmt/core.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "app/recipe/recipe_schema.h"
#include "data/file_glob.h"
#include "data/tokenizer.h"
#include "data/tokenizer_record.h"
#include "kernels/base/errors.h"

namespace trainer {

std::vector<std::string> check_shard_tokenizers(const Recipe& r) {
  // Each folder once, with the first key that reads it.
  std::map<std::string, std::string> folders;
  auto add = [&](const std::vector<BlendSource>& sources, const char* key) {
    for (const BlendSource& s : sources)
      for (const std::string& file : expand_glob_list(s.path)) {
        const std::string dir = std::filesystem::path(file).parent_path().string();
        folders.emplace(dir.empty() ? "." : dir, key);
      }
  };
  add(r.data.train, "data.train");
  add(r.data.val, "data.val");
  for (const BlendStage& stage : r.data.stages) add(stage.train, "data.stages");
  std::optional<TokenizerRecord> ours;
  std::vector<std::string> notes;
  for (const auto& [dir, key] : folders) {
    const std::optional<TokenizerRecord> theirs = read_tokenizer_record(dir);
    if (!theirs) {
      notes.push_back(fmt::format("data: note: the shards in '{}' carry no {} (made by llm.c's scripts or an older "
                                  "trainer): that they were made with data.tokenizer {} is not checked",
                                  dir, kTokenizerRecordName, message_quote(r.data.tokenizer)));
      continue;
    }
    if (!ours) {
      const auto tok = make_tokenizer(r.data.tokenizer, r.data.tokenizer_dir, "data.tokenizer", r.data.bos, r.data.eos,
                                      "data.bos", "data.eos");
      ours = tokenizer_record(r.data.tokenizer, r.data.tokenizer_dir, tok->vocab_size());
    }
    if (same_tokenizer(*theirs, *ours)) continue;
    throw ConfigError(fmt::format(
        "{}: {}: the shards in '{}' were made with the tokenizer {} (vocabulary {}, fingerprint {}; {}/{}), but "
        "data.tokenizer is {} (vocabulary {}, fingerprint {}); trained so, the ids mean other text; valid: "
        "data.tokenizer {}, or shards prepared with {}",
        r.path, key, dir, message_quote(theirs->tokenizer), theirs->vocab_size, theirs->fingerprint, dir,
        kTokenizerRecordName, message_quote(ours->tokenizer), ours->vocab_size, ours->fingerprint,
        message_quote(theirs->tokenizer), message_quote(ours->tokenizer)));
  }
  return notes;
}

}  // namespace trainer
