// Rules that relate several recipe keys, checked once the whole recipe is known and before any
// work starts; every rank runs the same checks on the same recipe, so all agree. Each message
// points at the key that most likely needs changing, names the values involved and what would
// be valid.
#include "app/recipe/recipe_checks.h"

#include "app/hf/hf_folder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "app/recipe/recipe_schema.h"
#include "data/tokenizer.h"
#include "kernels/base/check.h"
#include "kernels/base/errors.h"
#include "parallel/zero_policy.h"

namespace trainer {

std::string KeyOrigins::of(const std::string& path) const {
  auto it = where.find(path);
  return it == where.end() ? file : it->second;
}

namespace {

constexpr int kGpt2TokenizerIds = 50257;
constexpr int kByteTokenizerIds = 257;  // 256 bytes + end-of-text

[[noreturn]] void fail(const KeyOrigins& origins, const std::string& path, const std::string& text) {
  throw ConfigError(fmt::format("{}: {}: {}", origins.of(path), path, text));
}

// data.tokenizer names a tokenizer whose ids all fit model.vocab_size, and data.bos / data.eos
// name its tokens. A tokenizer.json is loaded for this (its vocabulary size is in the file).
void check_tokenizer(const Recipe& r, const KeyOrigins& o) {
  const DataConfig& d = r.data;
  const bool named = d.tokenizer == "gpt2" || d.tokenizer == "byte";
  if (!named && tokenizer_json_path(d.tokenizer).empty())
    fail(o, "data.tokenizer",
         fmt::format("unknown tokenizer {}: neither gpt2 nor byte nor a tokenizer.json file or a "
                     "folder holding one; valid: gpt2, byte, or a path to a tokenizer.json (the Llama 2 and 3 "
                     "and Qwen 3 files of configs/ come from scripts/fetch_data.sh --hf)",
                     message_quote(d.tokenizer)));
  int ids = d.tokenizer == "gpt2" ? kGpt2TokenizerIds : kByteTokenizerIds;
  if (!named || d.bos != "auto" || d.eos != "auto") {
    const auto tok = make_tokenizer(d.tokenizer, d.tokenizer_dir, o.of("data.tokenizer") + ": data.tokenizer",
                                    d.bos, d.eos, o.of("data.bos") + ": data.bos",
                                    o.of("data.eos") + ": data.eos");
    ids = tok->vocab_size();
  }
  if (r.model.vocab_size < ids)
    fail(o, "model.vocab_size",
         fmt::format("{} is smaller than the {} tokenizer's {} token ids; valid: >= {} with "
                     "data.tokenizer {}",
                     r.model.vocab_size, d.tokenizer, ids, ids, d.tokenizer));
}

// "a multiple of 16 (e.g. 96 or 112)" around `value`. 64-bit: values reach INT_MAX.
std::string multiples_near(int64_t value, int64_t step) {
  int64_t below = value / step * step;
  if (below < step) return fmt::format("a multiple of {} (e.g. {})", step, step);
  return fmt::format("a multiple of {} (e.g. {} or {})", step, below, below + step);
}

// In increasing order; pairs up to sqrt(n), so an n near INT_MAX takes 46,341 steps, not 2^31.
std::string divisors_of(int n) {
  std::vector<int> low, high;
  for (int64_t d = 1; d * d <= n; ++d) {
    if (n % d != 0) continue;
    low.push_back(int(d));
    if (d * d != n) high.push_back(int(n / d));
  }
  low.insert(low.end(), high.rbegin(), high.rend());
  std::string out;
  for (int d : low) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return out;
}

// The keys only a llama model has (ArchScope::llama); with gpt2 each is refused rather than
// ignored, the rope_scaling section too.
void check_no_llama_keys(const KeyOrigins& o) {
  std::vector<std::string> keys{"model.rope_scaling"};
  for (const KeySpec& k : recipe_schema())
    if (k.arch == ArchScope::llama) keys.push_back(k.path);
  for (const std::string& key : keys)
    if (o.has(key))
      fail(o, key,
           "applies to model.arch llama only, and model.arch is gpt2 (learned positions, LayerNorm, GELU, "
           "tied embeddings); valid: remove the key, or model.arch: llama");
}

void check_llama(const ModelConfig& m, const KeyOrigins& o) {
  if (m.n_kv_head > 0 && m.n_head % m.n_kv_head != 0)
    fail(o, "model.n_kv_head",
         fmt::format("{} does not divide model.n_head {} (each k/v head serves a whole group of query heads); "
                     "valid: a divisor of {} ({}), or 0 for n_head",
                     m.n_kv_head, m.n_head, m.n_head, divisors_of(m.n_head)));
  if (m.d_model % m.n_head == 0 && (m.d_model / m.n_head) % 2 != 0)
    fail(o, "model.d_model",
         fmt::format("{} / model.n_head {} = head size {}, which is odd; rotary embeddings turn pairs of "
                     "features, so valid: d_model / n_head even",
                     m.d_model, m.n_head, m.d_model / m.n_head));
  const RopeScalingConfig& rs = m.rope_scaling;
  if (rs.factor == 0) {
    // Spelled-out defaults (a printed recipe) are harmless; another value would be ignored.
    const RopeScalingConfig none;
    const std::pair<const char*, bool> unused[] = {
        {"model.rope_scaling.low_freq_factor", rs.low_freq_factor != none.low_freq_factor},
        {"model.rope_scaling.high_freq_factor", rs.high_freq_factor != none.high_freq_factor},
        {"model.rope_scaling.original_context", rs.original_context != none.original_context}};
    for (const auto& [key, differs] : unused)
      if (o.has(key) && differs)
        fail(o, key,
             "is set but model.rope_scaling.factor is 0 (no scaling), so it would have no effect; valid: "
             "model.rope_scaling.factor >= 1 with it, or remove it");
  } else {
    if (rs.factor < 1)
      fail(o, "model.rope_scaling.factor",
           fmt::format("{} would shorten the wavelengths it scales; valid: 0 (no scaling) or >= 1 (Llama 3.1: 8)",
                       rs.factor));
    if (rs.high_freq_factor <= rs.low_freq_factor)
      fail(o, "model.rope_scaling.high_freq_factor",
           fmt::format("{} is not above model.rope_scaling.low_freq_factor {}; valid: high > low (Llama 3.1: 4 "
                       "and 1)",
                       rs.high_freq_factor, rs.low_freq_factor));
  }
  if (m.ffn_dim == 0 && llama_ffn_dim64(m.d_model, m.ffn_multiple_of) > std::numeric_limits<int>::max())
    fail(o, "model.ffn_dim",
         fmt::format("0 resolves to {} (8 x model.d_model {} / 3 rounded up to a multiple of "
                     "model.ffn_multiple_of {}), more than {}; valid: a smaller d_model or an explicit ffn_dim",
                     llama_ffn_dim64(m.d_model, m.ffn_multiple_of), m.d_model, m.ffn_multiple_of,
                     std::numeric_limits<int>::max()));
  if (!m.init_from.empty() && is_llmc_file_path(m.init_from))
    fail(o, "model.init_from",
         fmt::format("{}: llm.c model files hold GPT-2 weights only, and model.arch is llama; valid: \"\" "
                     "(random init), a Hugging Face model folder (config.json + safetensors), or model.arch: gpt2",
                     message_quote(m.init_from)));
}

void check_model(const Recipe& r, const KeyOrigins& o) {
  const ModelConfig& m = r.model;
  // Recipe::padded_vocab() is an int; everything after this may call it.
  const int64_t padded = (int64_t(m.vocab_size) + m.vocab_multiple - 1) / m.vocab_multiple * m.vocab_multiple;
  if (padded > std::numeric_limits<int>::max())
    fail(o, "model.vocab_size",
         fmt::format("{} rounded up to a multiple of model.vocab_multiple {} is {}, more than {}; "
                     "valid: a padded vocabulary of at most {}",
                     m.vocab_size, m.vocab_multiple, padded, std::numeric_limits<int>::max(),
                     std::numeric_limits<int>::max()));
  if (m.d_model % m.n_head != 0)
    fail(o, "model.d_model",
         fmt::format("{} is not divisible by model.n_head {}; valid: {}", m.d_model, m.n_head,
                     multiples_near(m.d_model, m.n_head)));
  if (family_of(m.arch).keys == ConfigKeys::llama) check_llama(m, o);
  else check_no_llama_keys(o);
  check_tokenizer(r, o);
}

// The interleaved schedule and its chunks: each needs the other, two or more stages, and a
// layer per virtual stage.
void check_virtual_stages(const Recipe& r, const KeyOrigins& o) {
  const ParallelConfig& p = r.parallel;
  const bool interleaved = p.schedule == Schedule::interleaved;
  if (p.interleaved() && !interleaved)
    fail(o, "parallel.virtual_stages",
         fmt::format("{} chunks per rank need parallel.schedule: interleaved but it is {}; valid: 1, or schedule "
                     "interleaved",
                     p.virtual_stages, schedule_name(p.schedule)));
  if (interleaved && !p.interleaved())
    fail(o, "parallel.schedule",
         fmt::format("interleaved needs parallel.virtual_stages >= 2 (chunks per rank) but it is {}; valid: "
                     "virtual_stages 2 or more, or schedule 1f1b",
                     p.virtual_stages));
  if (interleaved && !p.pipelined())
    fail(o, "parallel.schedule",
         fmt::format("interleaved needs parallel.pipeline >= 2 but it is {}; valid: pipeline 2 or more, or "
                     "schedule 1f1b",
                     p.pipeline));
  // In 64 bits: the micro_batch x data product is checked (against int) only later.
  const int64_t per_step = int64_t(r.train.micro_batch) * p.data;
  const int64_t m = per_step > 0 ? r.train.global_batch / per_step : 0;
  if (interleaved && p.pipelined() && per_step > 0 && r.train.global_batch % per_step == 0 && m % p.pipeline != 0)
    fail(o, "parallel.schedule",
         fmt::format("interleaved sends micro-batches round the ring in groups of parallel.pipeline {} (Megatron-LM's "
                     "rule; a partial group deadlocks its order), but a step has {} micro-batches per data rank "
                     "(train.global_batch {} / (micro_batch {} x data {})); valid: a global_batch that is a multiple "
                     "of {}, or schedule 1f1b",
                     p.pipeline, m, r.train.global_batch, r.train.micro_batch, p.data,
                     int64_t(r.train.micro_batch) * p.data * p.pipeline));
  const int64_t n_stages = int64_t(p.pipeline) * p.virtual_stages;
  if (p.interleaved() && r.model.n_layer < n_stages) {
    const int most = r.model.n_layer / std::max(1, p.pipeline);
    fail(o, "parallel.virtual_stages",
         fmt::format("{} x parallel.pipeline {} = {} virtual stages but model.n_layer is {} (each virtual stage needs "
                     "a layer); valid: {}",
                     p.virtual_stages, p.pipeline, n_stages, r.model.n_layer,
                     most >= 2 ? fmt::format("virtual_stages 2 to {}", most)
                               : fmt::format("fewer stages (at most {} for 2 virtual stages), or schedule 1f1b",
                                             r.model.n_layer / 2)));
  }
}

void check_parallel(const Recipe& r, const KeyOrigins& o) {
  const ParallelConfig& p = r.parallel;
  const ModelConfig& m = r.model;
  // Recipe::world() is an int; everything after this may call it.
  const int64_t world = int64_t(p.data) * p.tensor * p.pipeline;
  if (world > std::numeric_limits<int>::max())
    fail(o, "parallel.data",
         fmt::format("data {} x tensor {} x pipeline {} = {} ranks; valid: a product of at most {}",
                     p.data, p.tensor, p.pipeline, world, std::numeric_limits<int>::max()));
  if (!p.tensor_divides(m.n_head))
    fail(o, "parallel.tensor",
         fmt::format("{} does not divide model.n_head {}; valid: a divisor of {} ({})", p.tensor,
                     m.n_head, m.n_head, divisors_of(m.n_head)));
  if (family_of(m.arch).keys == ConfigKeys::llama) {
    const int kv = m.n_kv_head > 0 ? m.n_kv_head : m.n_head;
    if (!p.tensor_divides(kv))
      fail(o, "parallel.tensor",
           fmt::format("{} does not divide model.n_kv_head {} (each tensor rank holds whole k/v heads); valid: a "
                       "divisor of {} ({})",
                       p.tensor, kv, kv, divisors_of(kv)));
    const int ffn = r.ffn_dim();
    if (!p.tensor_divides(ffn))
      fail(o, "parallel.tensor",
           fmt::format("{} does not divide the SwiGLU width {} (model.ffn_dim); valid: a divisor of {}", p.tensor,
                       ffn, ffn));
  }
  if (!p.tensor_divides(r.padded_vocab()))
    fail(o, "parallel.tensor",
         fmt::format("{} does not divide the padded vocabulary {} (model.vocab_size {} rounded up "
                     "to a multiple of model.vocab_multiple {}); valid: a tensor degree dividing "
                     "{}, or a vocab_multiple that is a multiple of {}",
                     p.tensor, r.padded_vocab(), m.vocab_size, m.vocab_multiple, r.padded_vocab(),
                     p.tensor));
  if (m.n_layer < p.pipeline)
    fail(o, "parallel.pipeline",
         fmt::format("{} stages but model.n_layer is {}; valid: at most {} (each stage needs a "
                     "layer)",
                     p.pipeline, m.n_layer, m.n_layer));
  check_virtual_stages(r, o);
  const int n_stages = p.pipeline * p.virtual_stages;  // at most model.n_layer here
  if (!p.stages.empty()) {
    const std::string per = p.interleaved()
                                ? fmt::format("parallel.pipeline {} x parallel.virtual_stages {} is {}; valid: one "
                                              "entry per virtual stage in model order",
                                              p.pipeline, p.virtual_stages, n_stages)
                                : fmt::format("parallel.pipeline is {}; valid: one entry per stage", p.pipeline);
    if (int(p.stages.size()) != n_stages)
      fail(o, "parallel.stages",
           fmt::format("{} entries but {} ({} entries) summing to model.n_layer {}, or [] for an even split",
                       p.stages.size(), per, n_stages, m.n_layer));
    const int64_t sum = std::accumulate(p.stages.begin(), p.stages.end(), int64_t(0));
    if (sum != m.n_layer)
      fail(o, "parallel.stages",
           fmt::format("the entries sum to {} but model.n_layer is {}; valid: {} entries >= 1 "
                       "summing to {}, or [] for an even split",
                       sum, m.n_layer, n_stages, m.n_layer));
  }
  // Per-unit parameter gathers (zero 3) are not combined with pipelining (see README).
  if (zero_policy(p.zero).param_gather() == ParamGather::per_unit && p.pipelined())
    fail(o, "parallel.zero",
         fmt::format("zero: 3 with pipeline > 1 is not supported; use zero 1 or 2 with "
                     "pipelining (parallel.pipeline is {})",
                     p.pipeline));
}

// Packed documents: where they split, and the one attention kernel that cannot mask them.
void check_documents(const Recipe& r, const KeyOrigins& o) {
  const std::string& token = r.data.document_token;
  if (token != "auto") {
    int64_t id = -1;
    const bool number = !token.empty() && token.size() < 12 &&
                        std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (number) id = std::stoll(token);
    if (!number || id >= r.model.vocab_size)
      fail(o, "data.document_token",
           fmt::format("{} is not a token id of the vocabulary (model.vocab_size {}); valid: auto, or a token id from "
                       "0 to {}",
                       message_quote(token), r.model.vocab_size, r.model.vocab_size - 1));
  }
  if (r.train.attention_mask == AttentionMask::document && r.train.attention == AttentionImpl::cudnn)
    fail(o, "train.attention",
         "cudnn does not implement train.attention_mask: document (its variable-length support is not wired here); "
         "valid: flash or auto with document masks");
}

void check_train(const Recipe& r, const KeyOrigins& o) {
  check_documents(r, o);
  if (r.parallel.schedule == Schedule::zero_bubble && r.parallel.pipelined() && r.train.recompute != Recompute::none)
    fail(o, "parallel.schedule",
         fmt::format("zero_bubble keeps each micro-batch's saved activations until its weight-gradient pass, "
                     "but train.recompute {} rebuilds them in backward into a buffer the next block reuses; "
                     "valid: train.recompute none, or schedule 1f1b",
                     recompute_name(r.train.recompute)));
  const TrainConfig& t = r.train;
  if (r.parallel.sequence_parallel && !r.parallel.tensor_parallel())
    fail(o, "parallel.sequence_parallel",
         "true needs tensor parallelism but parallel.tensor is 1; valid: false, or parallel.tensor > 1");
  if (r.parallel.sequence_parallel && !r.parallel.tensor_divides(int64_t(t.micro_batch) * t.seq_len))
    fail(o, "parallel.sequence_parallel",
         fmt::format("true splits the {} x {} = {} rows of a micro-batch over parallel.tensor {}, which does "
                     "not divide them; valid: micro_batch x seq_len a multiple of {}, or false",
                     t.micro_batch, t.seq_len, int64_t(t.micro_batch) * t.seq_len, r.parallel.tensor,
                     r.parallel.tensor));
  const int64_t per_step = int64_t(t.micro_batch) * r.parallel.data;
  if (t.global_batch % per_step != 0)
    fail(o, "train.global_batch",
         fmt::format("{} is not a multiple of train.micro_batch {} x parallel.data {} = {}; "
                     "valid: {}",
                     t.global_batch, t.micro_batch, r.parallel.data, per_step,
                     multiples_near(t.global_batch, per_step)));
  if (t.seq_len > r.model.seq_len)
    fail(o, "train.seq_len",
         fmt::format("{} exceeds model.seq_len {} (the position table); valid: 1 to {}, or 0 for "
                     "model.seq_len",
                     t.seq_len, r.model.seq_len, r.model.seq_len));
  if (t.device == DeviceChoice::cpu && t.precision == PrecisionChoice::bf16)
    fail(o, "train.precision",
         "bf16 needs train.device cuda (bf16 is CUDA-only here) but train.device is cpu; valid "
         "with device cpu: fp32 or auto");
  if (t.graphs == StepGraphs::step) {
    const ParallelConfig& p = r.parallel;
    if (!p.one_rank())
      fail(o, "train.graphs",
           fmt::format("step captures one process's whole micro-batch, but parallel is data {} x tensor {} x "
                       "pipeline {} (collectives and stage-to-stage messages run between the ops); valid: off, or "
                       "step with data, tensor and pipeline 1",
                       p.data, p.tensor, p.pipeline));
    if (zero_policy(p.zero).shard_gradients())
      fail(o, "train.graphs",
           fmt::format("step with parallel.zero {}: ZeRO {} takes gradient (and parameter) buffers from a pool "
                       "during the backward, which a replay cannot repeat; valid: off, or step with zero 0 or 1",
                       p.zero, p.zero));
  }
  if (t.device == DeviceChoice::cpu && t.attention != AttentionImpl::auto_detect)
    fail(o, "train.attention",
         fmt::format("{} is a CUDA kernel but train.device is cpu; valid with device cpu: auto",
                     attention_impl_name(t.attention)));
}

void check_outputs(const Recipe& r, const KeyOrigins& o) {
  if (r.eval.every > 0 && r.data.val.empty())
    fail(o, "eval.every",
         fmt::format("{} needs validation shards but data.val is empty; valid: set data.val, or "
                     "eval.every 0",
                     r.eval.every));
  // Every data rank evaluates the same number of batches, so the evaluated set (and the
  // validation loss) is the same in every layout.
  if (r.eval.every > 0 && r.eval.batches % r.parallel.data != 0)
    fail(o, "eval.batches",
         fmt::format("{} is not a multiple of parallel.data {} (each data rank evaluates an equal "
                     "share); valid: {}",
                     r.eval.batches, r.parallel.data, multiples_near(r.eval.batches, r.parallel.data)));
  const SpikeConfig& spike = r.train.spike;
  if (spike.factor > 0 && spike.factor <= 1)
    fail(o, "train.spike.factor",
         fmt::format("{} would call every step a spike (the mean itself is not above it); valid: 0 (off) or a "
                     "number above 1, e.g. 3",
                     spike.factor));
  const bool rolls_back = r.train.on_nonfinite == NonfiniteAction::rollback ||
                          (spike.factor > 0 && spike.action == SpikeAction::rollback);
  if (rolls_back && r.checkpoint.dir.empty())
    fail(o, r.train.on_nonfinite == NonfiniteAction::rollback ? "train.on_nonfinite" : "train.spike.action",
         "rollback returns to the newest checkpoint but checkpoint.dir is empty; valid: set checkpoint.dir (and "
         "checkpoint.every), or stop / skip");
  const std::vector<int>& ts = r.log.trace_steps;
  if (ts.size() != 2 || ts[0] > ts[1])
    fail(o, "log.trace_steps",
         fmt::format("[{}] is not [first, last] with first <= last; valid e.g. [2, 4]", fmt::join(ts, ", ")));
  if (r.checkpoint.every > 0 && r.checkpoint.dir.empty())
    fail(o, "checkpoint.every",
         fmt::format("{} needs a directory but checkpoint.dir is empty; valid: set "
                     "checkpoint.dir, or checkpoint.every 0",
                     r.checkpoint.every));
}

}  // namespace

// What auto degrees cannot be combined with: choices that only make sense for a known degree.
void check_auto(const Recipe& r, const KeyOrigins& o) {
  const ParallelConfig& p = r.parallel;
  if (ParallelDims::is_auto(p.pipeline) && p.schedule == Schedule::interleaved)
    fail(o, "parallel.schedule",
         "interleaved needs a fixed parallel.pipeline (its virtual stages divide the layers per rank) but it is "
         "auto; valid: 1f1b or gpipe, or a fixed parallel.pipeline");
  if (ParallelDims::is_auto(p.pipeline) && !p.stages.empty())
    fail(o, "parallel.stages",
         "layers per stage need a fixed parallel.pipeline but it is auto; valid: [] (an even split), or a fixed "
         "parallel.pipeline");
  if (ParallelDims::is_auto(p.tensor) && p.sequence_parallel)
    fail(o, "parallel.sequence_parallel",
         "true needs a fixed parallel.tensor > 1 but it is auto; valid: false, or a fixed parallel.tensor");
}

void check_recipe(const Recipe& recipe, const KeyOrigins& origins) {
  check_model(recipe, origins);
  if (recipe.auto_layout()) {
    // The rules that do not involve the auto degrees, checked with them at 1 (zero 0); the
    // chosen layout is checked in full when it is resolved (app/engine/auto_layout.h).
    check_auto(recipe, origins);
    Recipe fixed = recipe;
    for (int* degree : {&fixed.parallel.data, &fixed.parallel.tensor, &fixed.parallel.pipeline})
      if (ParallelDims::is_auto(*degree)) *degree = 1;
    if (ParallelDims::is_auto(fixed.parallel.zero)) fixed.parallel.zero = 0;
    check_parallel(fixed, origins);
    check_train(fixed, origins);
    check_outputs(fixed, origins);
    return;
  }
  check_parallel(recipe, origins);
  check_train(recipe, origins);
  check_outputs(recipe, origins);
}

void check_layout(const Recipe& recipe, int world_size) {
  const ParallelConfig& p = recipe.parallel;
  if (world_size < 1)
    throw ConfigError(fmt::format("world size {} is invalid; valid: 1 or more ranks", world_size));
  TRAINER_CHECK(!recipe.auto_layout(), "check_layout before parallel: auto was resolved");
  if (recipe.world() != world_size)
    throw ConfigError(fmt::format("{}: parallel: data {} x tensor {} x pipeline {} = {} rank{}, "
                                  "but the job has {}; set the degrees so their product is {}",
                                  recipe.path.empty() ? "recipe" : recipe.path, p.data, p.tensor,
                                  p.pipeline, recipe.world(), recipe.world() == 1 ? "" : "s",
                                  world_size, world_size));
}

std::vector<std::string> recipe_notes(const Recipe& r) {
  std::vector<std::string> notes;
  if (r.parallel.auto_bench > 0 && !r.auto_layout())
    notes.push_back(fmt::format("parallel: note: parallel.auto_bench {} times candidates only for auto degrees, and "
                                "every degree is fixed here; it does nothing (valid with effect: parallel: auto, or "
                                "one degree auto)",
                                r.parallel.auto_bench));
  const LrScheduleConfig& s = r.train.lr_schedule;
  if (s.warmup_steps > r.train.steps)
    notes.push_back(fmt::format(
        "lr_schedule: note: train.lr_schedule.warmup_steps {} is more than train.steps {}: the run ends during "
        "warm-up, at {:.3g} of train.optimizer.lr, and the {} schedule never starts (valid without this note: "
        "warmup_steps <= {})",
        s.warmup_steps, r.train.steps, double(r.train.steps) / double(s.warmup_steps), lr_kind_name(s.kind),
        r.train.steps));
  return notes;
}

}  // namespace trainer
