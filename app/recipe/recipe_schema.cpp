// The recipe schema table (see recipe_schema.h) and its lookups; the texts derived from it are
// in recipe_key_text.cpp. Ranges here are
// single-key rules; rules that relate several keys live in recipe_checks.cpp.
#include "app/recipe/recipe_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "kernels/base/enum_names.h"
#include "kernels/base/excerpt.h"

namespace trainer {

const char kSourcesValid[] =
    "a non-empty glob, or a list of {path: glob, weight: number > 0 (default 1), name: [A-Za-z0-9_.-]+}";

namespace {

// Choice keys are stored in enums of uint8_t; the schema reaches them as their byte so that
// one field type serves every enum (unsigned char may alias any object).
template <class E>
uint8_t& enum_storage(E& value) {
  static_assert(std::is_enum_v<E> && std::is_same_v<std::underlying_type_t<E>, uint8_t>,
                "choice keys must be enums with uint8_t storage");
  return reinterpret_cast<uint8_t&>(value);
}

// A field accessor: a captureless lambda converted to a plain function pointer.
#define TRAINER_FIELD(member) (+[](Recipe& r) -> auto& { return r.member; })
// A choice key's accessor and its enum's name table: two arguments of choice_key, checked to
// be about the same enum.
#define TRAINER_CHOICE(member, table)                                                    \
  (+[](Recipe& r) -> uint8_t& {                                                          \
    static_assert(std::is_same_v<decltype(r.member), decltype(table[0].value)>,          \
                  "the name table of a choice key is that of its field's enum");         \
    return enum_storage(r.member);                                                       \
  }),                                                                                    \
      table

constexpr Bound kNone{};
Bound at_least(double v) { return {BoundKind::closed, v}; }
Bound above(double v) { return {BoundKind::open, v}; }
Bound at_most(double v) { return {BoundKind::closed, v}; }
Bound below(double v) { return {BoundKind::open, v}; }

KeySpec make_key(std::string path, FieldRef field, Bound lo, Bound hi, std::string description) {
  KeySpec k;
  k.path = std::move(path);
  k.field = field;
  k.lo = lo;
  k.hi = hi;
  k.description = std::move(description);
  return k;
}

KeySpec auto_ok(KeySpec k) {
  k.auto_value = AutoValue::accepted;
  return k;
}

KeySpec llama_only(KeySpec k) {
  k.arch = ArchScope::llama;
  return k;
}

KeySpec text_key(std::string path, StringField field, std::string description) {
  return make_key(std::move(path), field, kNone, kNone, std::move(description));
}

// A key naming one value of an enum: its names and values are the enum's name table.
template <class E, size_t N>
KeySpec choice_key(std::string path, ChoiceField field, const EnumName<E> (&table)[N],
                   std::string description) {
  KeySpec k = make_key(std::move(path), field, kNone, kNone, std::move(description));
  k.choices = enum_names(table);
  for (E value : enum_values(table)) k.choice_values.push_back(static_cast<uint8_t>(value));
  return k;
}


std::vector<KeySpec> build_schema() {
  std::vector<KeySpec> s;
  // model
  s.push_back(choice_key("model.arch", TRAINER_CHOICE(model.arch, kModelArchNames),
                         "model family: gpt2 (pre-LayerNorm, learned positions, GELU, tied embeddings) or "
                         "llama (RMSNorm, rotary positions, SwiGLU, grouped-query attention, no biases)"));
  s.push_back(make_key("model.n_layer", TRAINER_FIELD(model.n_layer), at_least(1), kNone,
                  "transformer blocks"));
  s.push_back(make_key("model.n_head", TRAINER_FIELD(model.n_head), at_least(1), kNone,
                  "attention heads per block"));
  s.push_back(make_key("model.d_model", TRAINER_FIELD(model.d_model), at_least(1), kNone,
                  "width of the residual stream (channels)"));
  s.push_back(make_key("model.vocab_size", TRAINER_FIELD(model.vocab_size), at_least(1), kNone,
                  "token ids the model knows (before padding)"));
  s.push_back(make_key("model.seq_len", TRAINER_FIELD(model.seq_len), at_least(1), kNone,
                  "maximum context (gpt2: rows of the position table)"));
  s.push_back(make_key("model.vocab_multiple", TRAINER_FIELD(model.vocab_multiple), at_least(1), kNone,
                  "vocabulary padded up to a multiple of this (faster GEMMs)"));
  s.push_back(text_key("model.init_from", TRAINER_FIELD(model.init_from),
                       "llm.c model file (.bin) or Hugging Face model folder (config.json + safetensors) to "
                       "start from; \"\" = random init"));
  s.push_back(text_key("model.from", TRAINER_FIELD(model.from),
                       "Hugging Face model folder whose config.json gives the model keys the recipe leaves "
                       "out (those it sets must agree); the shape only: model.init_from loads weights; \"\" = none"));
  s.push_back(make_key("model.init_std", TRAINER_FIELD(model.init_std), above(0), kNone,
                  "standard deviation of the random weight init"));
  s.push_back(llama_only(make_key("model.n_kv_head", TRAINER_FIELD(model.n_kv_head), at_least(0), kNone,
                  "llama: k/v heads shared by groups of query heads (1 = multi-query); 0 = n_head")));
  s.push_back(llama_only(make_key("model.ffn_dim", TRAINER_FIELD(model.ffn_dim), at_least(0), kNone,
                  "llama: SwiGLU width; 0 = 8 d_model / 3 rounded up to a multiple of model.ffn_multiple_of")));
  s.push_back(llama_only(make_key("model.ffn_multiple_of", TRAINER_FIELD(model.ffn_multiple_of), at_least(1), kNone,
                  "llama: the multiple model.ffn_dim 0 rounds up to (Llama's multiple_of)")));
  s.push_back(llama_only(make_key("model.norm_eps", TRAINER_FIELD(model.norm_eps), above(0), kNone,
                  "llama: RMSNorm epsilon (rms_norm_eps)")));
  s.push_back(llama_only(make_key("model.rope_theta", TRAINER_FIELD(model.rope_theta), above(0), kNone,
                  "llama: rotary embedding base")));
  s.push_back(llama_only(make_key("model.tie_embeddings", TRAINER_FIELD(model.tie_embeddings), kNone, kNone,
                  "llama: the output head is the token table (false: its own lm_head.weight)")));
  s.push_back(llama_only(make_key("model.qk_norm", TRAINER_FIELD(model.qk_norm), kNone, kNone,
                  "llama: RMSNorm of every q and k head before rope (Qwen3, OLMo 2)")));
  s.push_back(llama_only(make_key("model.rope_scaling.factor", TRAINER_FIELD(model.rope_scaling.factor), at_least(0), kNone,
                  "llama: Llama 3.1 rotary frequency scaling factor; 0 = no scaling")));
  s.push_back(llama_only(make_key("model.rope_scaling.low_freq_factor", TRAINER_FIELD(model.rope_scaling.low_freq_factor),
                  above(0), kNone, "llama: wavelengths above original_context / this are scaled")));
  s.push_back(llama_only(make_key("model.rope_scaling.high_freq_factor", TRAINER_FIELD(model.rope_scaling.high_freq_factor),
                  above(0), kNone, "llama: wavelengths below original_context / this are kept")));
  s.push_back(llama_only(make_key("model.rope_scaling.original_context",
                  TRAINER_FIELD(model.rope_scaling.original_context), at_least(1), kNone,
                  "llama: the context the model was first trained with")));
  // parallel
  s.push_back(auto_ok(make_key("parallel.data", TRAINER_FIELD(parallel.data), at_least(1), kNone,
                  "data-parallel degree (model replicas); auto = chosen at start")));
  s.push_back(auto_ok(make_key("parallel.tensor", TRAINER_FIELD(parallel.tensor), at_least(1), kNone,
                  "tensor-parallel degree (Megatron split of each layer); auto = chosen at start")));
  s.push_back(auto_ok(make_key("parallel.pipeline", TRAINER_FIELD(parallel.pipeline), at_least(1), kNone,
                  "pipeline-parallel degree (stages of consecutive layers); auto = chosen at start")));
  s.push_back(choice_key("parallel.schedule", TRAINER_CHOICE(parallel.schedule, kScheduleNames),
                         "pipeline schedule: all forwards then all backwards, one-forward-one-backward, "
                         "interleaved 1f1b over parallel.virtual_stages chunks per rank, or zero_bubble (ZB-H1: "
                         "backward split into input and weight gradients, the weight pass filling the bubble)"));
  s.push_back(make_key("parallel.virtual_stages", TRAINER_FIELD(parallel.virtual_stages), at_least(1), kNone,
                  "model chunks per pipeline rank (Megatron's virtual stages; schedule interleaved needs 2 or "
                  "more): the bubble shrinks to (p-1)/(v*m+p-1) for v times the pipeline messages"));
  s.push_back(auto_ok(make_key("parallel.zero", TRAINER_FIELD(parallel.zero), at_least(0), at_most(3),
                  "ZeRO stage: 1 shards optimizer state, 2 also gradients, 3 also parameters; auto = chosen at start")));
  s.push_back(make_key("parallel.sequence_parallel", TRAINER_FIELD(parallel.sequence_parallel), kNone, kNone,
                  "split LayerNorm and residual regions along the sequence across the tensor group"));
  s.push_back(make_key("parallel.bucket_mb", TRAINER_FIELD(parallel.bucket_mb), above(0), kNone,
                  "size of a gradient bucket in MiB (all-reduced; under ZeRO-1 on GPUs reduce-scattered per unit)"));
  s.push_back(choice_key("parallel.grad_reduce_dtype",
                         TRAINER_CHOICE(parallel.grad_reduce_dtype, kGradReduceDTypeNames),
                         "what the data group's gradient reductions carry: bf16 halves their bytes (each bucket or "
                         "unit rounded to bf16 and summed in bf16; accumulation stays fp32)"));
  s.push_back(make_key("parallel.stages", TRAINER_FIELD(parallel.stages), at_least(1), kNone,
                  "layers per pipeline stage, one entry per stage (per virtual stage, in model order, with "
                  "virtual_stages > 1); [] = even split"));
  s.push_back(make_key("parallel.timeout_s", TRAINER_FIELD(parallel.timeout_s), above(0), kNone,
                  "a collective waiting longer than this means a dead rank: abort the job"));
  s.push_back(make_key("parallel.auto_bench", TRAINER_FIELD(parallel.auto_bench), at_least(0), kNone,
                  "with auto degrees: time this many of the best modelled layouts for a few steps each on the "
                  "job and keep the fastest; 0 = the model's choice"));
  // train
  s.push_back(choice_key("train.device", TRAINER_CHOICE(train.device, kDeviceChoiceNames),
                         "where to compute; auto = cuda when a GPU is present, else cpu"));
  s.push_back(choice_key("train.precision", TRAINER_CHOICE(train.precision, kPrecisionChoiceNames),
                         "activations and weights; auto = bf16 on cuda, fp32 on cpu"));
  s.push_back(make_key("train.micro_batch", TRAINER_FIELD(train.micro_batch), at_least(1), kNone,
                  "sequences per micro-batch per data-parallel rank"));
  s.push_back(make_key("train.seq_len", TRAINER_FIELD(train.seq_len), at_least(0), kNone,
                  "tokens per training sequence; 0 = model.seq_len"));
  s.push_back(make_key("train.global_batch", TRAINER_FIELD(train.global_batch), at_least(1), kNone,
                  "sequences per optimizer step over all ranks (sets gradient accumulation)"));
  s.push_back(make_key("train.steps", TRAINER_FIELD(train.steps), at_least(1), kNone,
                  "optimizer steps to train"));
  s.push_back(make_key("train.seed", TRAINER_FIELD(train.seed), at_least(0), kNone,
                  "seed of weight init, data order and sampling"));
  s.push_back(choice_key("train.recompute", TRAINER_CHOICE(train.recompute, kRecomputeNames),
                         "activations recomputed in backward instead of stored"));
  s.push_back(choice_key("train.attention", TRAINER_CHOICE(train.attention, kAttentionImplNames),
                         "attention kernel on cuda; auto = flash (ours); cudnn = cuDNN fused attention (bf16, "
                         "head size a multiple of 8 up to 128)"));
  s.push_back(choice_key("train.attention_mask", TRAINER_CHOICE(train.attention_mask, kAttentionMaskNames),
                         "causal: each token sees every earlier token of its sequence; document: only those of its "
                         "own packed document (documents split at data.document_token)"));
  s.push_back(make_key("train.reset_positions", TRAINER_FIELD(train.reset_positions), kNone, kNone,
                  "positions (learned or rotary) restart at 0 in each packed document"));
  s.push_back(choice_key("train.graphs", TRAINER_CHOICE(train.graphs, kStepGraphsNames),
                         "step: each micro-batch's forward and backward captured once and replayed as one graph "
                         "(CUDA graphs: one launch instead of hundreds, for small models; the CPU replays its "
                         "recorded ops, the same bits and no faster); one process (data, tensor and pipeline 1), "
                         "zero 0 or 1, no bench --profile"));
  s.push_back(make_key("train.stochastic_rounding", TRAINER_FIELD(train.stochastic_rounding), kNone, kNone,
                  "round bf16 weight updates stochastically (bf16 only)"));
  s.push_back(make_key("train.peak_tflops", TRAINER_FIELD(train.peak_tflops), at_least(0), kNone,
                  "peak TFLOP/s per device for MFU; 0 = from the built-in device table"));
  s.push_back(make_key("train.allow_oversubscribe", TRAINER_FIELD(train.allow_oversubscribe), kNone, kNone,
                  "start even when the plan's peak memory exceeds what the device or host (MemAvailable, cgroup "
                  "limit) has free; false = refuse before allocating"));
  s.push_back(choice_key("train.on_nonfinite", TRAINER_CHOICE(train.on_nonfinite, kNonfiniteActionNames),
                         "a step whose loss or gradient norm is NaN or infinite: stop the run, skip its update, or "
                         "roll back to the newest checkpoint past its batches"));
  s.push_back(make_key("train.max_rollbacks", TRAINER_FIELD(train.max_rollbacks), at_least(0), kNone,
                  "rollbacks (on_nonfinite or spike.action rollback) allowed per run before it stops"));
  s.push_back(make_key("train.optimizer.lr", TRAINER_FIELD(train.optimizer.lr), above(0), kNone,
                  "AdamW peak learning rate"));
  s.push_back(make_key("train.optimizer.betas",
                  +[](Recipe& r) {
                    return std::pair<double*, double*>{&r.train.optimizer.beta1,
                                                       &r.train.optimizer.beta2};
                  },
                  at_least(0), below(1), "AdamW [beta1, beta2]: decay of the moment estimates"));
  s.push_back(make_key("train.optimizer.eps", TRAINER_FIELD(train.optimizer.eps), above(0), kNone,
                  "AdamW epsilon"));
  s.push_back(make_key("train.optimizer.weight_decay", TRAINER_FIELD(train.optimizer.weight_decay),
                  at_least(0), kNone, "AdamW decoupled weight decay (matrices only, not biases or norms)"));
  s.push_back(make_key("train.optimizer.grad_clip", TRAINER_FIELD(train.optimizer.grad_clip), at_least(0),
                  kNone, "clip the global gradient norm to this; 0 = no clipping"));
  s.push_back(choice_key("train.lr_schedule.kind", TRAINER_CHOICE(train.lr_schedule.kind, kLrKindNames),
                         "shape after warm-up; wsd = warmup-stable-decay"));
  s.push_back(make_key("train.lr_schedule.warmup_steps", TRAINER_FIELD(train.lr_schedule.warmup_steps),
                  at_least(0), kNone,
                  "steps of linear warm-up from 0 to lr; more than train.steps is allowed, with a note (the run ends "
                  "in warm-up)"));
  s.push_back(make_key("train.lr_schedule.min_lr_ratio", TRAINER_FIELD(train.lr_schedule.min_lr_ratio),
                  at_least(0), at_most(1), "final learning rate as a fraction of lr"));
  s.push_back(make_key("train.lr_schedule.decay_fraction",
                  TRAINER_FIELD(train.lr_schedule.decay_fraction), above(0), at_most(1),
                  "wsd: share of the steps spent decaying at the end"));
  s.push_back(make_key("train.spike.factor", TRAINER_FIELD(train.spike.factor), at_least(0), kNone,
                  "a spike is a loss (or gradient norm) above factor x its mean over the last window steps; 0 = off"));
  s.push_back(make_key("train.spike.window", TRAINER_FIELD(train.spike.window), at_least(1), kNone,
                  "accepted steps in the running mean; detection starts once the window is full"));
  s.push_back(choice_key("train.spike.action", TRAINER_CHOICE(train.spike.action, kSpikeActionNames),
                         "a spike: warn and apply the update, skip the update, or roll back past its batches"));
  // data
  KeySpec train_sources = make_key("data.train", TRAINER_FIELD(data.train), kNone, kNone,
                                   "training token shards (llm.c .bin format): a glob (several "
                                   "comma-separated), or a blend: a list of {path, weight, name}");
  train_sources.presence = Presence::required;
  train_sources.text_rule = TextRule::non_empty;
  train_sources.valid_note = kSourcesValid;
  s.push_back(train_sources);
  KeySpec val_sources = make_key("data.val", TRAINER_FIELD(data.val), kNone, kNone,
                                 "validation token shards, as data.train; a list gives a val loss "
                                 "per source and their weighted mean; \"\" = none");
  val_sources.valid_note = "\"\" (none), or sources as for data.train";
  s.push_back(val_sources);
  KeySpec stages = make_key("data.stages", TRAINER_FIELD(data.stages), kNone, kNone,
                            "mixes by step range: stage i trains on its train list (or data.train "
                            "when it has none) up to until_step; later steps use data.train");
  stages.valid_note = "list of {until_step: integer >= 1, increasing; train: sources}";
  s.push_back(stages);
  KeySpec tokenizer = text_key("data.tokenizer", TRAINER_FIELD(data.tokenizer),
                               "gpt2 BPE (50,257 ids), byte (256 ids + end-of-text), or the path "
                               "of a Hugging Face tokenizer.json (or of a folder holding one)");
  tokenizer.text_rule = TextRule::non_empty;
  tokenizer.valid_note = "gpt2, byte, or a path to a tokenizer.json";
  s.push_back(tokenizer);
  s.push_back(text_key("data.tokenizer_dir", TRAINER_FIELD(data.tokenizer_dir),
                       "directory with encoder.json and vocab.bpe (gpt2 tokenizer)"));
  s.push_back(text_key("data.bos", TRAINER_FIELD(data.bos),
                       "token starting each document: auto (the tokenizer's: end-of-text for "
                       "gpt2/byte, tokenizer_config.json's for a tokenizer.json), none, or a token"));
  s.push_back(text_key("data.eos", TRAINER_FIELD(data.eos),
                       "token ending each document: auto, none, or a token"));
  s.push_back(text_key("data.document_token", TRAINER_FIELD(data.document_token),
                       "where packed documents split for train.attention_mask: document and train.reset_positions: "
                       "auto (a document starts at each BOS: end-of-text for gpt2/byte; else right after each EOS) "
                       "or a token id (a document starts at each occurrence)"));
  // eval
  s.push_back(make_key("eval.every", TRAINER_FIELD(eval.every), at_least(0), kNone,
                  "validation loss every this many steps; 0 = off"));
  s.push_back(make_key("eval.batches", TRAINER_FIELD(eval.batches), at_least(1), kNone,
                  "micro-batches per validation"));
  // checkpoint
  s.push_back(text_key("checkpoint.dir", TRAINER_FIELD(checkpoint.dir),
                       "directory for step_NNNNNNNN/ checkpoints; \"\" = no checkpoints"));
  s.push_back(make_key("checkpoint.every", TRAINER_FIELD(checkpoint.every), at_least(0), kNone,
                  "checkpoint every this many steps; 0 = only at the end and on a signal"));
  s.push_back(make_key("checkpoint.keep", TRAINER_FIELD(checkpoint.keep), at_least(0), kNone,
                  "newest checkpoints of this run kept (and its last with a finite loss); 0 = keep all"));
  KeySpec resume = text_key("checkpoint.resume", TRAINER_FIELD(checkpoint.resume),
                            "auto = newest in checkpoint.dir if any, never = start fresh, or a path");
  resume.valid_note = "auto, never or a checkpoint path";
  resume.text_rule = TextRule::non_empty;
  s.push_back(resume);
  // log
  s.push_back(make_key("log.every", TRAINER_FIELD(log.every), at_least(1), kNone,
                  "progress line every this many steps"));
  s.push_back(text_key("log.metrics", TRAINER_FIELD(log.metrics),
                       "JSON-lines metrics file; \"\" = none"));
  s.push_back(make_key("log.sample_every", TRAINER_FIELD(log.sample_every), at_least(0), kNone,
                  "print a generated sample every this many steps; 0 = never"));
  s.push_back(make_key("log.sample_tokens", TRAINER_FIELD(log.sample_tokens), at_least(1), kNone,
                  "tokens per generated sample"));
  s.push_back(text_key("log.sample_prompt", TRAINER_FIELD(log.sample_prompt),
                       "text the samples start from"));
  s.push_back(text_key("log.trace", TRAINER_FIELD(log.trace),
                       "timeline of log.trace_steps as a Chrome trace-event JSON file (Perfetto); \"\" = none"));
  s.push_back(make_key("log.trace_steps", TRAINER_FIELD(log.trace_steps), at_least(1), kNone,
                  "[first, last] steps the trace records"));
  return s;
}

#undef TRAINER_FIELD
#undef TRAINER_CHOICE

std::string parent_of(const std::string& path) {
  size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}


}  // namespace

const std::vector<KeySpec>& recipe_schema() {
  static const std::vector<KeySpec> schema = build_schema();
  return schema;
}

std::vector<std::string> recipe_sections() {
  std::vector<std::string> sections;
  for (const KeySpec& k : recipe_schema()) {
    std::string section = parent_of(k.path);
    // Sub-sections appear after their parent: list every ancestor first.
    std::vector<std::string> chain;
    for (std::string s = section; !s.empty(); s = parent_of(s)) chain.insert(chain.begin(), s);
    for (const std::string& s : chain)
      if (std::find(sections.begin(), sections.end(), s) == sections.end()) sections.push_back(s);
  }
  return sections;
}

const KeySpec* find_key(const std::string& path) {
  for (const KeySpec& k : recipe_schema())
    if (k.path == path) return &k;
  return nullptr;
}

bool key_applies(const KeySpec& key, const Recipe& recipe) {
  return key.arch == ArchScope::any || family_of(recipe.model.arch).keys == ConfigKeys::llama;
}

bool is_section(const std::string& path) {
  const std::vector<std::string> sections = recipe_sections();
  return std::find(sections.begin(), sections.end(), path) != sections.end();
}

std::vector<const KeySpec*> section_auto_keys(const std::string& section) {
  std::vector<const KeySpec*> keys;
  for (const KeySpec& k : recipe_schema())
    if (k.auto_value == AutoValue::accepted && parent_of(k.path) == section) keys.push_back(&k);
  return keys;
}

std::vector<std::string> section_children(const std::string& section) {
  std::vector<std::string> names;
  auto add = [&](const std::string& path) {
    if (parent_of(path) != section) return;
    std::string name = section.empty() ? path : path.substr(section.size() + 1);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  };
  for (const KeySpec& k : recipe_schema()) {
    for (std::string s = parent_of(k.path); !s.empty(); s = parent_of(s)) add(s);
    add(k.path);
  }
  return names;
}

}  // namespace trainer
