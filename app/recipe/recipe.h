// Recipe: everything about a run, loaded strictly from YAML (see configs/README.md for every
// key). Invariant: a Recipe returned by load_recipe() has passed every single-field and
// cross-field check that does not need the world size; check_layout() adds the world-size
// checks. Both throw ConfigError naming file:line:column, the value and what is valid.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/blend_source.h"
#include "data/tokenizer.h"
#include "kernels/backend.h"
#include "kernels/base/enum_names.h"
#include "model/documents.h"
#include "model/gpt_block.h"
#include "model/lr_schedule.h"
#include "parallel/parallel_dims.h"
#include "parallel/pipeline_schedule.h"

namespace trainer {

// train.precision; auto = bf16 on cuda, fp32 on cpu.
enum class PrecisionChoice : uint8_t { auto_detect, fp32, bf16 };
inline constexpr EnumName<PrecisionChoice> kPrecisionChoiceNames[] = {
    {PrecisionChoice::auto_detect, "auto"}, {PrecisionChoice::fp32, "fp32"}, {PrecisionChoice::bf16, "bf16"}};

struct RopeScalingConfig {  // model.rope_scaling (llama); factor 0 = none
  float factor = 0;
  float low_freq_factor = 1;
  float high_freq_factor = 4;
  int original_context = 8192;
};

// parallel.grad_reduce_dtype: what the data group's gradient reductions carry (the
// accumulators stay f32; model/param_store.h).
enum class GradReduceDType : uint8_t { fp32, bf16 };
inline constexpr EnumName<GradReduceDType> kGradReduceDTypeNames[] = {{GradReduceDType::fp32, "fp32"},
                                                                      {GradReduceDType::bf16, "bf16"}};

// train.on_nonfinite: what a step whose loss or gradient norm is NaN or infinite does.
enum class NonfiniteAction : uint8_t { stop, skip, rollback };
inline constexpr EnumName<NonfiniteAction> kNonfiniteActionNames[] = {
    {NonfiniteAction::stop, "stop"}, {NonfiniteAction::skip, "skip"}, {NonfiniteAction::rollback, "rollback"}};
// train.graphs: step captures each micro-batch's forward and backward once (a CUDA graph; on
// the CPU the recorded ops) and replays it, one launch where there were hundreds.
enum class StepGraphs : uint8_t { off, step };
inline constexpr EnumName<StepGraphs> kStepGraphsNames[] = {{StepGraphs::off, "off"}, {StepGraphs::step, "step"}};
// train.spike.action: what a loss or gradient-norm spike does.
enum class SpikeAction : uint8_t { warn, skip, rollback };
inline constexpr EnumName<SpikeAction> kSpikeActionNames[] = {
    {SpikeAction::warn, "warn"}, {SpikeAction::skip, "skip"}, {SpikeAction::rollback, "rollback"}};

struct ModelConfig {
  ModelArch arch = kDefaultArch;
  int n_layer = 12;
  int n_head = 12;
  int d_model = 768;
  int vocab_size = 50257;
  int seq_len = 1024;         // maximum context (gpt2: rows of the position table)
  int vocab_multiple = 128;   // vocabulary padded up to a multiple of this
  std::string init_from;      // llm.c model file or HF model folder to start from ("" = random init)
  std::string from;           // HF model folder whose config.json gives the model keys ("" = none)
  float init_std = 0.02f;
  // llama only (check_model refuses them with gpt2):
  int n_kv_head = 0;          // 0 = n_head
  int ffn_dim = 0;            // 0 = Llama's rule from ffn_multiple_of (see llama_ffn_dim)
  int ffn_multiple_of = 256;
  float norm_eps = 1e-5f;
  float rope_theta = 10000.0f;
  RopeScalingConfig rope_scaling;
  bool tie_embeddings = true;
  bool qk_norm = false;
};

// The degrees (ParallelDims: data, tensor, pipeline, virtual_stages) and how the layout runs.
// parallel.data/tensor/pipeline/zero may be written as `auto` (kAutoDegree): chosen at start
// from the world size, the device and the model (app/engine/auto_layout.h); a loaded recipe may
// hold it, a resolved one never does.
struct ParallelConfig : ParallelDims {
  Schedule schedule = Schedule::one_f_one_b;
  int zero = 0;      // or kAutoDegree
  double bucket_mb = 25.0;
  GradReduceDType grad_reduce_dtype = GradReduceDType::fp32;
  std::vector<int> stages;  // layers per (virtual) pipeline stage; empty = even split
  double timeout_s = 300;   // a collective that waits longer means a dead rank
  bool sequence_parallel = false;  // split LayerNorm regions along the sequence (tensor > 1)
  int auto_bench = 0;  // with auto degrees: candidates timed on the job (0 = the model's choice)
};

struct OptimizerConfig {
  double lr = 6e-4;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0;  // 0 = no clipping
};

struct LrScheduleConfig {
  LrKind kind = LrKind::cosine;
  int warmup_steps = 0;
  double min_lr_ratio = 0.1;
  double decay_fraction = 0.2;  // wsd: share of steps spent decaying at the end
};

// A spike: loss above factor x the mean loss of the last `window` accepted steps, or the
// gradient norm above factor x its mean (app/engine/bad_steps.h).
struct SpikeConfig {
  double factor = 0;  // 0 = off
  int window = 50;
  SpikeAction action = SpikeAction::warn;
};

struct TrainConfig {
  DeviceChoice device = DeviceChoice::auto_detect;
  PrecisionChoice precision = PrecisionChoice::auto_detect;
  int micro_batch = 4;
  int seq_len = 0;  // 0 in the file means "model.seq_len"; resolved by load_recipe
  int global_batch = 4;
  int steps = 100;
  uint64_t seed = 1337;
  Recompute recompute = Recompute::none;
  AttentionImpl attention = AttentionImpl::auto_detect;
  AttentionMask attention_mask = AttentionMask::causal;  // document: each token sees its own document only
  bool reset_positions = false;  // positions (learned or rotary) restart at 0 in each document
  StepGraphs graphs = StepGraphs::off;
  bool stochastic_rounding = true;
  OptimizerConfig optimizer;
  LrScheduleConfig lr_schedule;
  double peak_tflops = 0;  // MFU denominator override; 0 = from the built-in device table
  bool allow_oversubscribe = false;  // start even when the plan's memory exceeds what is free
  NonfiniteAction on_nonfinite = NonfiniteAction::stop;
  SpikeConfig spike;
  int max_rollbacks = 3;  // rollbacks per run before it stops
};

struct DataConfig {
  std::vector<BlendSource> train;  // one glob (a plain string in YAML) or a weighted blend
  std::vector<BlendSource> val;    // empty = none; several = a val loss per source
  std::vector<BlendStage> stages;  // mixes by step range; steps after the last use train
  std::string tokenizer = "gpt2";  // gpt2, byte, or a tokenizer.json path (data/tokenizer.h)
  std::string tokenizer_dir = "datasets/tokenizer";  // encoder.json + vocab.bpe
  std::string bos = "auto", eos = "auto";  // per-document marks (data/tokenizer_config.h)
  // Where packed documents split (train.attention_mask: document, train.reset_positions): auto
  // (the tokenizer's BOS, else end-of-text, else the token after each EOS) or a token id.
  std::string document_token = "auto";
};

struct EvalConfig {
  int every = 0;    // 0 = off
  int batches = 10;
};

struct CheckpointConfig {
  std::string dir;     // "" = no checkpoints
  int every = 0;       // 0 = only at the end and on a signal
  int keep = 3;        // 0 = keep all
  std::string resume = "auto";  // auto | never | a checkpoint path
};

struct LogConfig {
  int every = 10;
  std::string metrics;      // JSON-lines file ("" = none)
  int sample_every = 0;     // 0 = no samples during training
  int sample_tokens = 64;
  std::string sample_prompt = "\n";
  std::string trace;                       // Chrome trace-event file ("" = none)
  std::vector<int> trace_steps = {2, 4};   // first and last step traced
};

struct Recipe {
  std::string path;  // file it came from
  ModelConfig model;
  ParallelConfig parallel;
  TrainConfig train;
  DataConfig data;
  EvalConfig eval;
  CheckpointConfig checkpoint;
  LogConfig log;

  int padded_vocab() const {
    return (model.vocab_size + model.vocab_multiple - 1) / model.vocab_multiple * model.vocab_multiple;
  }
  int world() const { return parallel.world(); }  // not with auto
  // Whether any of parallel.data/tensor/pipeline/zero is auto.
  bool auto_layout() const { return parallel.any_auto() || ParallelDims::is_auto(parallel.zero); }
  // llama's SwiGLU width: model.ffn_dim, or Llama's rule (llama_ffn_dim) when it is 0.
  int ffn_dim() const {
    return model.ffn_dim > 0 ? model.ffn_dim : llama_ffn_dim(model.d_model, model.ffn_multiple_of);
  }
  // Micro-batches per data rank per optimizer step (gradient accumulation).
  int grad_accum() const { return train.global_batch / (train.micro_batch * parallel.data); }
};

// Loads a recipe file, applies "section.key=value" overrides (parsed with the same types and
// errors as the file), fills defaults, and runs every check that does not need the world size.
Recipe load_recipe(const std::string& path, const std::vector<std::string>& overrides);
// The same for recipe text held in memory (a checkpoint's manifest); `name` stands for the
// file in messages.
Recipe load_recipe_text(const std::string& text, const std::string& name,
                        const std::vector<std::string>& overrides);
// Checks that need the world size (data * tensor * pipeline == world) and the backend.
void check_layout(const Recipe& recipe, int world_size);
// The fully resolved recipe as YAML (every key, defaults filled in).
std::string recipe_to_yaml(const Recipe& recipe);

}  // namespace trainer
