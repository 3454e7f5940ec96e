// GptDecoder: generation with a KV cache on one rank's part of the model (its pipeline stage on
// its tensor-parallel slice), reading the same ParamStore as the GptStage that trains it. Each
// forward runs only the new tokens: the prompt once, then one token per step, every block
// appending its k and v heads to its cache, so a step costs one pass over the weights instead
// of a forward over the whole window.
//
// Invariants:
// - Positions are absolute: the cache holds tokens 0 .. past() - 1 of the sequence, and gpt2's
//   position table and llama's rope see the same positions a full forward would, so the logits
//   equal a full forward's over the same tokens (up to rounding).
// - No sequence parallelism (a step has one row); tensor parallelism splits heads and the
//   vocabulary as in training. Stages run in order: the caller moves each stage's output rows
//   to the next stage's input(n); with virtual stages, chunk after chunk round the ring
//   (virtual stage c * pp + pp_rank is this rank's chunk c).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "model/param_store.h"
#include "model/stage_layout.h"
#include "parallel/comm.h"

namespace trainer {

class GptDecoder {
 public:
  // t_max: the longest sequence the cache holds (the model's context for generation).
  GptDecoder(const StageLayout& layout, ParamStore& store, Backend& backend, Comm* tp, int64_t t_max);
  ~GptDecoder();

  int64_t past() const;      // tokens in the cache
  int64_t capacity() const;  // t_max
  // Empties the cache: the next forward starts at position 0.
  void reset();
  // A stage without the embedding: the buffer (n, C) its input rows are received into.
  Tensor input(int64_t n);
  // Runs n new tokens at positions past() .. past() + n - 1 through chunk `chunk` and appends
  // them to its layers' caches; past() advances after the last chunk. Stage 0's chunk 0 embeds
  // `tokens` (host, n int32); the others read input(n). Returns the chunk's output rows (n, C):
  // what the next virtual stage receives. Needs 1 <= n and past() + n <= capacity().
  Tensor forward(int chunk, const int32_t* tokens, int64_t n);
  // Last stage, after forward: the logits of the newest token over the real vocabulary
  // (collective over the tensor group).
  std::vector<float> logits();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trainer
