// Trainer::generate: continues a prompt token by token (trainer sample, log.sample_every).
// With Decoding::kv_cache each stage keeps a GptDecoder: the prompt runs once, then one token
// per step, the activations of its rows passed from stage to stage over the pipeline group.
// The context is the last train.seq_len tokens: when the cache is full it restarts from the
// newest half of them (one prompt-sized pass every seq_len / 2 tokens), where full_window
// slides by one token and reruns the whole window each time. Up to seq_len tokens both see
// the same context and give the same logits up to rounding.
// The next token is chosen on the last stage's leader (greedy, or top-k sampling with a
// Philox draw keyed by the seed and the token's position) and broadcast to every rank.
// Trainer::forward_logits: every position's logits of one sequence from a full forward.
#include <algorithm>
#include <cmath>

#include "app/engine/trainer.h"
#include "kernels/base/check.h"
#include "model/gpt_decoder.h"
#include "model/rng.h"
#include "parallel/pipeline_executor.h"

namespace trainer {

namespace {

constexpr int kDecodeTag = 71;  // point-to-point tag of the decoder's activations

int32_t choose_token(const std::vector<float>& row, float temperature, int top_k, uint64_t seed, size_t position) {
  if (temperature <= 0) return int32_t(std::max_element(row.begin(), row.end()) - row.begin());
  std::vector<int32_t> order(row.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
  const int keep = top_k > 0 ? std::min<int>(top_k, int(row.size())) : int(row.size());
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    [&](int32_t a, int32_t b) { return row[a] > row[b] || (row[a] == row[b] && a < b); });
  const double mx = row[order[0]];
  double total = 0;
  std::vector<double> p(static_cast<size_t>(keep));
  for (int i = 0; i < keep; ++i) total += p[size_t(i)] = std::exp((row[order[i]] - mx) / temperature);
  const auto bits = philox4x32(seed, uint64_t(RngPurpose::sample), uint64_t(position));
  const double u = uniform_open(bits[0]) * total;
  double acc = 0;
  for (int i = 0; i < keep; ++i) {
    acc += p[size_t(i)];
    if (u <= acc) return order[i];
  }
  return order[keep - 1];
}

}  // namespace

std::vector<int32_t> Trainer::generate(const std::vector<int32_t>& prompt_ids, const GenerateOptions& o) {
  const int T = step_opts_.seq_len, B = step_opts_.micro_batch;
  const int pp = layout_->dims().pipeline, pp_rank = grid_->coords().pp;
  const bool last = grid_->last_stage();
  std::vector<int32_t> tokens = prompt_ids;
  if (tokens.empty()) tokens.push_back(0);

  std::unique_ptr<GptDecoder> decoder;
  if (o.decoding == Decoding::kv_cache)
    decoder = std::make_unique<GptDecoder>(*layout_, *store_, *backend_, layout_->dims().tensor_parallel() ? &grid_->tp() : nullptr, T);
  // Runs tokens [from, end) through this stage's decoder, virtual stage after virtual stage
  // (with virtual stages round the ring: the last stage's chunk c feeds stage 0's chunk c + 1).
  const int v = layout_->dims().virtual_stages;
  auto decode = [&](size_t from) {
    const int64_t n = int64_t(tokens.size() - from);
    for (int c = 0; c < v; ++c) {
      const int vs = c * pp + pp_rank;
      if (vs > 0) grid_->pp().recv(decoder->input(n), prev_stage(pp_rank, pp), kDecodeTag);
      Tensor out = decoder->forward(c, tokens.data() + from, n);
      if (vs < v * pp - 1) grid_->pp().send(out, next_stage(pp_rank, pp), kDecodeTag);
    }
  };
  // The logits of the token after `tokens`, on the last stage (empty elsewhere).
  std::vector<std::vector<int32_t>> in(1, std::vector<int32_t>(size_t(B) * T, 0)), tg = in;
  size_t fed = 0;  // tokens the decoder has seen
  auto next_logits = [&]() -> std::vector<float> {
    if (decoder) {
      if (decoder->past() + int64_t(tokens.size() - fed) > decoder->capacity()) {
        decoder->reset();
        fed = tokens.size() - std::min<size_t>(tokens.size(), size_t(std::max(1, T / 2)));
      }
      decode(fed);
      fed = tokens.size();
      backend_->synchronize();
      return last ? decoder->logits() : std::vector<float>{};
    }
    const int len = int(std::min<size_t>(tokens.size(), size_t(T)));
    const int32_t* window = tokens.data() + (tokens.size() - size_t(len));
    for (int b = 0; b < B; ++b)
      for (int t = 0; t < T; ++t) in[0][size_t(b) * T + t] = t < len ? window[t] : 0;
    run_forward_only(1, in, tg, StageMode::logits);
    return last ? stage_->logits_row(0, len - 1) : std::vector<float>{};
  };

  for (int k = 0; k < o.tokens; ++k) {
    const std::vector<float> row = next_logits();
    int32_t next = 0;
    if (last) {
      if (o.on_logits) o.on_logits(row);
      next = choose_token(row, o.temperature, o.top_k, o.seed, tokens.size());
    }
    world_.broadcast(make_tensor(&next, DType::i32, Device::cpu, {1}), stage_leader(pp - 1));
    tokens.push_back(next);
  }
  return tokens;
}

std::vector<std::vector<float>> Trainer::forward_logits(const std::vector<int32_t>& tokens) {
  const int T = step_opts_.seq_len, B = step_opts_.micro_batch;
  TRAINER_CHECK(!tokens.empty() && tokens.size() <= size_t(T), "forward_logits: 1 to train.seq_len tokens");
  std::vector<std::vector<int32_t>> in(1, std::vector<int32_t>(size_t(B) * T, 0)), tg = in;
  std::copy(tokens.begin(), tokens.end(), in[0].begin());
  run_forward_only(1, in, tg, StageMode::logits);
  std::vector<std::vector<float>> rows;
  if (grid_->last_stage())
    for (size_t t = 0; t < tokens.size(); ++t) rows.push_back(stage_->logits_row(0, int(t)));
  return rows;
}

}  // namespace trainer
