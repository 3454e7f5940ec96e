// `model.from: DIR`: the recipe's model section from a Hugging Face folder's config.json
// (gpt_config_from_hf). Every model key the recipe leaves out takes the folder's value; a key
// the recipe sets explicitly must agree with the folder, and every one that does not is listed
// in one ConfigError (the key, where the recipe sets it, both values). Only the shape comes
// from the folder: model.init_from loads its weights (write both to fine-tune from it), and
// model.vocab_multiple, model.init_std and the training keys stay the recipe's.
#pragma once

#include <string>

namespace trainer {

struct KeyOrigins;
struct ModelConfig;

// Applies m.from (non-empty) to m; origins says which keys the recipe (or --set) wrote, and
// gains DIR/config.json as the origin of each key taken from the folder.
void apply_model_from(ModelConfig& m, KeyOrigins& origins);

}  // namespace trainer
