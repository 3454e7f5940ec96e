// Hugging Face model folders (config.json + model.safetensors or a sharded
// model.safetensors.index.json) for every family, in and out. What differs by family is its
// description's (ModelFamily::hf, model_family.h): config.json both ways, the weights stored
// transposed (GPT-2's Conv1D) and the buffers transformers recomputes (skipped on import).
// Names are the parameter table's, read with or without GPT-2's "transformer." prefix; the
// token table and an untied head hold vocab_size rows in the folder and padded_vocab rows here
// (the padding rows load as zero, are dropped on export). A tied model's folder may also hold
// lm_head.weight: it must equal the token table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/gpt_config.h"

namespace trainer {

class ParamStore;
class SafetensorsSet;

// How one of our global tensors is stored in the folder.
enum class HfTransform : uint8_t { copy, transpose, vocab_rows };
struct HfTensor {
  std::string name;               // ours (also the exported HF name)
  std::vector<int64_t> hf_shape;  // in the folder
  HfTransform transform = HfTransform::copy;
};
std::vector<HfTensor> hf_tensors(const GptConfig& config);
// The values of one of our global tensors (shape `stored`, all of it) as the folder stores
// them: the export of `ckpt export --format hf` and `--format safetensors`.
std::vector<float> to_hf_values(const HfTensor& t, const std::vector<int64_t>& stored, std::vector<float> values);

// The model shape config.json describes; padded_vocab is the real vocabulary (the recipe
// pads it). InputError naming the file, key, line and column for a family or setting we do
// not implement and for a value out of range (counts below 1, numbers that are not finite
// floats, a negative epsilon, theta or factor, an object that is another kind of value).
GptConfig gpt_config_from_hf(const std::string& dir);
// The same from config.json's text; `file` names it in messages.
GptConfig gpt_config_from_hf_json(const std::string& text, const std::string& file);
// The token ids a folder's config.json declares (-1: none), as transformers reads them.
struct HfTokenIds {
  int32_t bos = -1, eos = -1;
};
// config.json text for `config` (a transformers-loadable config of its family), with the
// tokenizer's BOS and EOS ids when given (without them transformers assumes 1 and 2).
std::string hf_config_json(const GptConfig& config, const HfTokenIds& ids = {});

// Every field where the folder's shape differs from the recipe's, listed in one ConfigError
// naming the recipe, the folder and the recipe keys.
void check_hf_config(const std::string& recipe_path, const std::string& dir, const GptConfig& folder,
                     const GptConfig& recipe);

// Missing, extra and misshapen tensors, listed in one InputError naming each tensor.
void check_hf_tensors(const std::string& dir, const SafetensorsSet& set, const GptConfig& config);

// A tied model's folder that repeats the head as lm_head.weight: InputError naming it and the
// first element where it differs from the token table (the model cannot hold both).
void check_tied_head(const std::string& dir, const SafetensorsSet& set, const GptConfig& config);

// model.init_from: DIR: checks the folder against the store's model, then sets every
// parameter this rank holds from the memory-mapped files (only its own slices are read).
void load_hf_into(ParamStore& store, const std::string& dir, const std::string& recipe_path);

// Whether `path` is a folder with a config.json (an HF folder rather than an llm.c file).
bool is_hf_folder(const std::string& path);
// Whether `path` is an llm.c model file: an existing regular file, or a name ending in .bin; any
// other path (a folder not written yet, say) is judged when training opens it.
bool is_llmc_file_path(const std::string& path);

}  // namespace trainer
