// Training refuses shards made with another tokenizer than data.tokenizer: each folder the
// recipe's data sources (data.train, data.val, data.stages) read from is checked against the
// record data prepare left there (data/tokenizer_record.h). A folder without a record
// (llm.c's scripts, an older trainer) is noted, not refused.
#pragma once

#include <string>
#include <vector>

#include "app/recipe/recipe.h"

namespace trainer {

// ConfigError naming the key, the folder and both tokenizers on a mismatch; returns one note
// per folder without a record. Reads the files, so call it once the shards have been opened.
std::vector<std::string> check_shard_tokenizers(const Recipe& recipe);

}  // namespace trainer
