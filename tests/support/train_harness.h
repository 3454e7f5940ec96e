// Harness for equivalence tests: tiny recipes, synthetic token shards, running a layout for a
// few steps in-process and gathering the global weights, so a parallel run can be compared
// with one process on the same global batch.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "app/engine/trainer.h"
#include "app/recipe/recipe.h"
#include "parallel/comm.h"

namespace trainer::testing {

// Writes llm.c-format shards of a deterministic synthetic corpus (repeating, learnable
// patterns) into dir, on rank 0 of world, and waits for it. Returns the glob.
std::string make_synthetic_shards(Comm& world, const std::string& dir, int vocab_size, int n_tokens);
// Raw llm.c shard writer (256 x int32 header, uint16 tokens).
void write_token_shard(const std::string& path, const std::vector<int>& tokens);

struct TinyLayout {
  int data = 1, tensor = 1, pipeline = 1, zero = 0;
  Schedule schedule = Schedule::one_f_one_b;
  int virtual_stages = 1;
  bool sequence_parallel = false;
  ModelArch arch = kDefaultArch;
  int n_layer = 4;  // more for virtual stages (a layer per virtual stage)
};

TinyLayout tiny_layout(ModelArch arch, int data, int tensor, int pipeline, int zero);
// A 4-layer (layout.n_layer), d_model 32 model with a vocabulary of 97 (padded to 128), seq_len 16,
// micro_batch 2, with `accum` micro-batches per data rank per step. gpt2: 4 heads; llama: 8
// query heads on 4 k/v heads (head size 4), SwiGLU width 48, untied head, qk_norm.
Recipe tiny_recipe(const std::string& train_glob, const TinyLayout& layout, int accum);

struct RunOutput {
  std::vector<double> losses;
  std::vector<double> grad_norms;
  std::map<std::string, std::vector<float>> weights;  // global tensors, on every rank
  bool replicas_identical = true;  // every copy of every element held the same value
};

// Trains `steps` steps of `recipe` on `world` (collective) and gathers the final weights.
RunOutput run_recipe(const Recipe& recipe, Comm& world, int steps);

// Largest relative difference ||a - b|| / ||b|| (L2 over each tensor) over all tensors; also
// reports the tensor. Element-wise relative error is not meaningful for weights that sit
// near zero (biases), where summation-order rounding dominates.
double max_weight_diff(const std::map<std::string, std::vector<float>>& a,
                       const std::map<std::string, std::vector<float>>& b, std::string* where);

// Trains `steps` steps of `recipe` on `world`, then continues `prompt` greedily by `tokens`
// tokens with the given decoding. logits: each new token's logits, on the last pipeline stage's ranks (empty elsewhere). Collective.
struct Generated {
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> logits;
};
Generated train_and_generate(const Recipe& recipe, Comm& world, int steps, const std::vector<int32_t>& prompt,
                             int tokens, Decoding decoding);
// max |a - b| / max |b| over the first `count` rows of logits (all when count < 0).
double max_logit_diff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                      int count = -1);

// doctest checks that a parallel run matches the single-process reference: loss at every step
// to 1e-5 relative, every replica of every element identical, every weight tensor to 1e-5
// relative (L2).
void check_matches_reference(const RunOutput& out, const RunOutput& ref);

}  // namespace trainer::testing
